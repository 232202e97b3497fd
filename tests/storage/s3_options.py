"""How the storage tests reach the S3-protocol server of conftest.py: s3fs's options for its endpoint."""


def options(endpoint):
    return {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
        "skip_instance_cache": True,
    }

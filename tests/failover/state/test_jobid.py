import pytest

from failover.state.jobid import InvalidJobId, JobId, job_id_problem, parse_job_id

VALID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


def test_flink_job_id_is_accepted():
    assert job_id_problem(VALID) is None
    assert parse_job_id(VALID) == JobId(VALID)
    assert str(JobId(VALID)) == VALID


@pytest.mark.parametrize(
    "value",
    [
        "../../etc",
        VALID.upper(),
        VALID[:-1],
        VALID + "0",
        VALID[:-1] + "/",
        VALID[:-2] + "..",
        "",
        "x" * 200,
        VALID + "\n",
        " " + VALID[1:],
    ],
)
def test_anything_but_32_lowercase_hex_is_refused(value):
    assert job_id_problem(value)
    with pytest.raises(InvalidJobId):
        JobId(value)
    with pytest.raises(InvalidJobId):
        parse_job_id(value)


@pytest.mark.parametrize("value", [None, 12, ["a"], {"a": 1}])
def test_non_strings_are_refused(value):
    assert "must be a string" in job_id_problem(value)


def test_long_refused_value_is_clipped_in_the_message():
    problem = job_id_problem("y" * 200)
    assert len(problem) < 120
    assert "got 200" in problem

import pytest

from failover.core.api import FLINK_DEPLOYMENT, GroupKind
from failover.state.checkpoints import DEFAULT_LAYOUT
from failover.state.profiles import (
    FLINK_BLUE_GREEN_DEPLOYMENT,
    FLINK_SESSION_JOB,
    TRIGGER_LABELS,
    ProfileError,
    load_profiles,
)

LABEL = "application.karmada.io/failover-jobid"


def session_job(**overrides):
    profile = {
        "kind": "FlinkSessionJob",
        "group": "flink.apache.org",
        "version": "v1beta1",
        "targets": [
            {"field": "spec.job.initialSavepointPath", "value": "{path}"},
            {"field": "spec.job.upgradeMode", "value": "savepoint", "keep": ["savepoint", "last-state"]},
        ],
    }
    profile.update(overrides)
    return profile


def load(*configs, label=LABEL, layouts=(DEFAULT_LAYOUT,)):
    return load_profiles(list(configs), label=label, layouts=layouts)


def test_flink_deployment_is_built_in():
    profiles = load()
    flink = profiles[FLINK_DEPLOYMENT]
    assert flink.version == "v1beta1"
    assert flink.label == LABEL and flink.labels == TRIGGER_LABELS
    assert [t.field for t in flink.targets] == ["spec.job.initialSavepointPath"]  # upgradeMode: only where valid
    assert flink.flink is not None
    assert [layout.template for layout in flink.layouts] == [DEFAULT_LAYOUT]
    assert [t.field for t in flink.path_targets] == ["spec.job.initialSavepointPath"]


def test_the_operators_other_kinds_are_built_in():
    profiles = load()
    assert profiles[FLINK_SESSION_JOB].path_targets[0].field == "spec.job.initialSavepointPath"
    assert profiles[FLINK_BLUE_GREEN_DEPLOYMENT].path_targets[0].field == "spec.template.spec.job.initialSavepointPath"


def test_a_configured_job_id_label_comes_first_and_the_conventions_stay():
    labels = load(label="example.com/job-id")[FLINK_DEPLOYMENT].labels
    assert labels == ("example.com/job-id", *TRIGGER_LABELS)


def test_configured_profile_takes_defaults_from_the_savepoint_settings():
    profiles = load(session_job())
    session = profiles[GroupKind("flink.apache.org", "FlinkSessionJob")]  # replaces the built-in one
    assert session.label == LABEL and session.flink is None
    assert session.name == "FlinkSessionJob"
    assert session.targets[1].keep == frozenset({"savepoint", "last-state"})
    assert FLINK_DEPLOYMENT in profiles


def test_configured_profile_with_its_own_label_and_layout():
    profile = load(session_job(label="example.com/job", layouts=["{root}/{job_id}"]))[
        GroupKind("flink.apache.org", "FlinkSessionJob")
    ]
    assert profile.label == "example.com/job"
    assert profile.layouts[0].template == "{root}/{job_id}"


def test_configured_flink_deployment_replaces_the_built_in_one():
    custom = session_job(
        kind="FlinkDeployment", targets=[{"field": "spec.job.initialSavepointPath", "value": "{path}"}]
    )
    assert len(load(custom)[FLINK_DEPLOYMENT].targets) == 1


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"kind": "flinkSessionJob"}, "kind"),
        ({"group": "Flink.Apache.org"}, "group"),
        ({"version": "1"}, "version"),
        ({"label": "bad label"}, "not a valid label key"),
        ({"targets": []}, "at least one"),
        ({"targets": [{"field": "spec.job.state", "value": "running"}]}, 'give one the value "{path}"'),
        ({"targets": [{"field": "spec.jobs[0].path", "value": "{path}"}]}, "not a dotted field path"),
        ({"targets": [{"field": "metadata.annotations.x", "value": "{path}"}]}, "under spec"),
        ({"targets": [{"field": "spec.restore", "value": "{checkpoint}"}]}, "unknown field {checkpoint}"),
        ({"targets": [{"field": "spec.restore", "value": "{path"}]}, "expected '}'"),
        ({"targets": [{"field": "spec.restore", "value": 3}]}, "must be a string"),
        ({"targets": [{"field": "spec.restore", "value": "{path}", "keep": "x"}]}, "keep"),
        ({"targets": [{"field": "spec.restore", "value": "{path}", "when": "x"}]}, "unknown key(s) when"),
        ({"targets": [{"field": "spec.a", "value": "{path}"}, {"field": "spec.a", "value": "x"}]}, "set twice"),
        ({"targets": [{"field": "spec.a", "value": "{path}"}, {"field": "spec.a.b", "value": "x"}]}, "contains"),
        ({"layouts": ["{root}/{jobID}"]}, "unknown field {jobID}"),
        ({"layouts": "{root}/{job_id}"}, "must be a list"),
        ({"layouts": []}, "at least one"),
        ({"savepointLayouts": ["/abs/{job_id}"]}, "start with {root}"),
        ({"path": "x"}, "unknown key(s) path"),
    ],
)
def test_a_profile_that_cannot_work_is_refused_with_its_reason(overrides, message):
    with pytest.raises(ProfileError) as error:
        load(session_job(**overrides))
    assert message in str(error.value)
    assert str(error.value).startswith("savepoint.profiles[0]")


def test_missing_group_is_refused():
    config = session_job()
    del config["group"]
    with pytest.raises(ProfileError, match=r"profiles\[0\].group"):
        load(config)


def test_two_profiles_for_one_kind_are_refused():
    with pytest.raises(ProfileError, match=r"profiles\[1\]: a second profile"):
        load(session_job(), session_job())


def test_profile_must_be_a_mapping():
    with pytest.raises(ProfileError, match="must be a mapping"):
        load("FlinkSessionJob")


def test_bad_default_label_and_layouts_are_refused():
    with pytest.raises(ProfileError, match="jobIdLabel"):
        load(label="-bad-")
    with pytest.raises(ProfileError, match="savepoint.layouts"):
        load(layouts=("{root}/{namespace}",))

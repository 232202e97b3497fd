"""bench/server_instructions.py without valgrind: reading h2load's and callgrind's output, the step arithmetic, the
tables, and the servers it would start (the ones run.py starts, built from the same set-up)."""

from __future__ import annotations

import pytest

from bench import server_instructions
from bench.run import set_up
from bench.server_instructions import parse_collected, per_review, render, successful_answers

# h2load 1.52's summary, trimmed to the lines it is read from.
H2LOAD_OK = """\
finished in 3.21s, 623.05 req/s, 171.33KB/s
requests: 2004 total, 2004 started, 2004 done, 2004 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 2004 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 550.82KB (564036) total, 45.04KB (46116) headers (space savings 0.00%), 465.92KB (477108) data
"""


def test_all_requests_answered_2xx() -> None:
    assert successful_answers(H2LOAD_OK) == 2004


def test_a_4xx_answer_is_not_counted_as_success() -> None:
    # h2load counts any HTTP answer as "succeeded"; the status codes line tells a 400 from a 200.
    output = H2LOAD_OK.replace("status codes: 2004 2xx, 0 3xx, 0 4xx", "status codes: 2003 2xx, 0 3xx, 1 4xx")
    assert successful_answers(output) == 2003


def test_failed_requests_are_not_counted() -> None:
    output = H2LOAD_OK.replace("2004 done, 2004 succeeded, 0 failed", "2004 done, 1990 succeeded, 14 failed")
    assert successful_answers(output) == 1990


def test_h2load_output_without_a_summary_is_not_success() -> None:
    assert successful_answers("connect: Connection refused\nprocess exited\n") is None


def test_collected_is_read_from_the_valgrind_log() -> None:
    log = "==4242== Events    : Ir\n==4242== Collected : 9876543210\n==4242==\n==4242== I   refs:      9,876,543,210\n"
    assert parse_collected(log) == 9_876_543_210
    assert parse_collected("==4242== valgrind: the 'impossible' happened\n") is None


def test_each_endpoint_is_the_difference_of_consecutive_steps() -> None:
    # step 0: warm-up only; step 1: + 1000 /validate reviews; step 2: + 1000 /mutate reviews.
    steps = [5_000_000_000, 5_542_000_000, 6_690_000_000]
    assert per_review(steps, 1000) == {"validate": 542_000.0, "mutate": 1_148_000.0}


def results(per_review_counts: dict) -> dict:
    return {
        "requests": 2000,
        "stack": {"ours": ["asyncio", "json"], "fast": ["uvloop", "orjson"]},
        "per_review": per_review_counts,
    }


def test_table_has_each_server_and_the_ratios_to_the_same_stack_ceiling() -> None:
    table = render(
        results(
            {
                "ceiling": {"validate": 542_000, "mutate": 547_000},
                "us": {"validate": 872_000, "mutate": 1_148_000},
                "kopf": {"validate": 2_180_000, "mutate": 4_592_000},
            }
        )
    )
    assert "| us | /validate | 872,000 | 1.61 |" in table
    assert "| us | /mutate | 1,148,000 | 2.10 |" in table
    assert "| ceiling | /mutate | 547,000 | 1.00 |" in table
    assert "| us / ceiling | 1.61 | 2.10 |" in table
    assert "| us / kopf | 0.40 | 0.25 |" in table
    assert "| ceiling / us (throughput of a CPU-bound `us`, × ceiling) | 0.62 | 0.48 |" in table
    assert "| kopf / us (throughput of a CPU-bound `us`, × kopf) | 2.50 | 4.00 |" in table
    assert "us-before" not in table  # no row for a server that was not counted


def test_table_without_the_ceiling_has_no_ratios_to_it() -> None:
    table = render(
        results(
            {
                "us": {"validate": 872_000, "mutate": 1_148_000},
                "us-before": {"validate": 1_090_000, "mutate": 1_148_000},
            }
        )
    )
    assert "| us | /validate | 872,000 | - |" in table
    assert "| us / us-before | 0.80 | 1.00 |" in table
    assert "us / ceiling" not in table


def test_the_servers_are_those_run_py_starts(tmp_path) -> None:
    """The server commands come from bench/servers.py with run.py's bodies, checkpoint tree and certificate."""
    kopf_python = tmp_path / "bench-venv" / "bin" / "python"
    body_files, newest, servers = set_up(tmp_path, kopf_python, None)
    assert set(server_instructions.DEFAULT_SERVERS) <= set(servers)
    assert set(servers) <= set(server_instructions.ALL_SERVERS)
    assert "us-before" not in servers
    assert body_files["validate"].read_bytes().startswith(b'{"apiVersion":"admission.k8s.io/v1"')
    assert newest.endswith("chk-11")
    assert str(tmp_path / "certs") in servers["us"].command
    assert servers["kopf"].command[0] == str(kopf_python)
    _, _, with_before = set_up(tmp_path, kopf_python, tmp_path / "before")
    assert with_before["us-before"].cwd == tmp_path / "before"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--servers", "us,nginx"], "--servers takes names from"),
        (["--servers", "us-before"], "us-before needs --before TREE"),
        (["--before", "."], "not a failover-relay source tree"),
        (["--requests", "0"], "--requests at least 1"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # "." is then an empty directory
    monkeypatch.setattr("sys.argv", ["server_instructions.py", *argv])
    with pytest.raises(SystemExit) as exit:
        server_instructions.main()
    assert exit.value.code == 2
    assert message in capsys.readouterr().err.splitlines()[-1]

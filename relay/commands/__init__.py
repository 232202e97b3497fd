"""The command line: one module per command (`*_command`), which adds the command's sub-parser (`add_parser`) and
runs it (`run`), and beside them what the offline commands do.

`failover-relay` builds every command's parser to run one of them, so a `*_command` module imports only what its
parser needs; what the command does is imported when it runs (`serve --member` never loads PyYAML or the Kubernetes
client). In the order `--help` lists them:

- `serve_command`: `serve`, the program: the admission server, and the loop with cluster access (relay/serve.py);
- `controllers_command`: `controllers`, the loop alone (relay/standalone.py);
- `inject_command`: `inject`, what the savepoint webhook does to one object; the work is `inject`;
- `check_command`: `check`, what `kubectl apply` will say about manifests, and `test`, a directory's expected
  verdicts; the work is the `check` package;
- `legacy_purge_modes_command`: `legacy-purge-modes`, the stored objects Karmada v1.19 will refuse; the work is
  `legacy_purge_modes`;
- `status_command`: `status`, where each workload stands in its failover lifecycle; the work is `status`, which prints
  with `status_tables`;
- `readiness_command`: `readiness`, whether each workload would survive a failover now; the work is
  `readiness_check`, which prints the report `readiness_report` builds;
- `drill_command`: `drill`, one workload moved on purpose and back, reported; the work is `drill_run`;
- `drain_command`: `drain` and `undrain`, the Cluster taint the loop drains a member cluster by, and the moves
  followed to their end; the work is `drain_cluster`;
- `manifests_command`: `manifests webhook`, the webhook configurations; the work, with the chart's webhook template
  and the PrometheusRule rendered from the same sources, is the `manifests` package.

No command's module imports another command's (tests/relay/test_command_modules.py). What the commands share:
`conventions` (their --help, a refusal in one line with exit 2, and the online commands' flags), `documents` (objects
from YAML files, read as kubectl reads them, within bounds a hostile file cannot pass; `check`, `test`, `inject`),
`online` (what the online commands work with, as kubectl's Factory: the Karmada client, the checkpoint storage, the
reads of Karmada, the one line a failure is said in; `status`, `readiness`, `drill`, `drain`, `legacy-purge-modes`),
`restore_lookup` (the restore a new copy would get now; `status`, `readiness`, `drill`) and `readiness_report` (the
readiness check's report; `readiness`, and `drill`, which runs it first). `reference` renders them all as
docs/cli.md.
"""

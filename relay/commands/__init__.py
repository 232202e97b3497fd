"""The command line: one module per command, each adding its sub-parser (`add_parser`) and running it (`run`).

`failover-relay` builds every command's parser to run one of them, so a command's module imports only what its parser
needs; what the command does is imported when it runs. The modules:

- `check_command`: `check` and `test` (what `kubectl apply` will say; a directory's expected verdicts); their work is
  the `check` package;
- `inject_command`: `inject` (what the savepoint webhook does to one object); its work is `inject`;
- `legacy_purge_modes_command`: `legacy-purge-modes` (stored objects Karmada v1.19 will refuse); its work is
  `legacy_purge_modes`, over `karmada_reads` (that the server is Karmada's, every stored object of a kind);
- `status_command`: `status` (where each workload stands in its failover lifecycle); its work is `status`, which
  prints with `status_tables`;
- `manifests_command`: `manifests webhook` (the webhook configurations); its work, with the chart's webhook template
  and the PrometheusRule rendered from the same sources, is the `manifests` package;
- `conventions`: what every command does alike: its --help, and a refusal in one line with exit 2;
- `documents`: Kubernetes objects from YAML files, read as kubectl reads them, within bounds a hostile file cannot pass.
"""

"""The program: `failover-relay` and what it runs.

- `cli`: the command line's entry: every command's parser (relay/commands/), and the one the arguments name, run;
- `settings`: every setting declared once, and read from the config file and the flags (a package, one module per
  job);
- `serve`: the TLS admission server, its certificates and their upkeep, and the cluster tasks it starts;
- `start_controllers`: starting the reconcile loop: cluster access, its settings, the task; and the caBundle sync;
- `standalone`: the loop without the webhook, with /metrics and /healthz over plain HTTP (`controllers`);
- `work_labels`: the Work mutator's wiring: cluster access and the binding reader;
- `fence_watcher`: a member relay's fence watcher's wiring: its cluster's access, the records' store, the task;
- `runtime`: which Python the server may run on (CPython gh-109534);
- `logs`: structlog set-up: one JSON object per line (or console on a terminal), short snake_case events;
- `kube_requests`: one request to an apiserver with a client's credentials, for what the typed client does not do;
- `connection_errors`: one readable line for a server that could not be reached;
- `yaml_keys`: a key given twice in a YAML mapping, which the config file and `check` refuse as kubectl does;
- `commands`: the command line, one module per command, and what the offline commands do.
"""

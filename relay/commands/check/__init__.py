"""What `check` and `test` do (their flags: relay/commands/check_command.py):

- `manifest_check`: each object as a write through a Karmada v1.19 control plane with the relay installed, offline;
  the findings, one line each, and the summary;
- `server_check`: `--server`: each object as a server-side apply with `dryRun=All` to a real apiserver;
- `schemas`: where the CRD schemas come from: bundled (`karmada_crds.json`), `--crds DIR`, or none;
- `testcases`: `test`: a directory's objects and the verdicts, warnings and patches expected of them.
"""

"""``python -m tests.karmada_env``: start the environment, print where everything is, run until Ctrl-C."""

from __future__ import annotations

import sys
import time

from tests.crd_sources import karmada_tree
from tests.envtest import ensure_binaries
from tests.karmada_env import KARMADA, KarmadaEnv


def main() -> int:
    """Start the environment, print where everything is, run until Ctrl-C."""
    env = KarmadaEnv(karmada_tree(source_only=False), ensure_binaries())
    env.start()
    try:
        print(
            f"Karmada {env.tree.version} ready in {env.startup_seconds:.1f} s; RSS {env.rss_bytes() / 2**30:.2f} GiB",
            flush=True,
        )
        for cluster in (KARMADA, *env.members):
            print(f"  {cluster}: KUBECONFIG={env.kubeconfig(cluster)}")
        print(f"  relay: {env.relay_url} (log {env.relay_log}); checkpoints: {env.checkpoint_root}")
        print(f"  logs: {env.logs_dir}\nCtrl-C stops everything.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        env.stop()


if __name__ == "__main__":
    sys.exit(main())

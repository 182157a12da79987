"""A local Ray instance for the batch tests (test_batch, test_batch_trust)."""
import os


def init_local_ray():
    """ray.init() on this machine's 2 CPUs; returns the ray module.

    Under tools/sanitize.sh this interpreter runs with the ASan runtime preloaded: Ray's own
    C++ daemons (GCS, raylet) would inherit it and, slowed by it on a loaded 2-core machine,
    miss Ray's start-up deadline ("The current node timed out during startup"). They start
    without it; the workers, which load the ASan-built extension, get it back."""
    import ray  # the test extra installs it: never skipped
    preload = os.environ.pop("LD_PRELOAD", None)
    try:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="warning",
                 log_to_driver=False, object_store_memory=80 * 1024 * 1024,
                 runtime_env={"env_vars": {"LD_PRELOAD": preload}} if preload else None)
    finally:
        if preload is not None:
            os.environ["LD_PRELOAD"] = preload
    return ray

"""The core's process-wide counters: which path each table took."""

from constmem import _loader


def upload_stats():
    """Returns a dict of counter name to value (uploads by source, skips, staging checks)."""
    values, names = _loader.ops().constmem_upload_stats()
    return {n.decode(): int(v) for n, v in zip(names.numpy(), values.numpy())}

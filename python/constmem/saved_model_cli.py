# SPDX-License-Identifier: Apache-2.0
"""TensorFlow's `saved_model_cli` with constmem's ops registered.

`saved_model_cli` cannot load custom op libraries; for models that use constmem's ops run
`python -m constmem.saved_model_cli run --dir MODEL ...` (or `constmem-saved-model-cli`) with the
same arguments.
"""

import sys

from tensorflow.python.tools import saved_model_cli

import constmem.tensorflow  # noqa: F401  (importing registers the ops)


def main() -> int | None:
    """Runs TensorFlow's saved_model_cli with sys.argv."""
    return saved_model_cli.main()


if __name__ == "__main__":
    sys.exit(main())

"""``python -m united`` is the same as the ``united`` console script."""

from united.cli import main

raise SystemExit(main())

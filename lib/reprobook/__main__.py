import sys

from reprobook.cli import main

sys.exit(main())

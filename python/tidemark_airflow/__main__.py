import sys

from tidemark_airflow.cli import main

sys.exit(main())

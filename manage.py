#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    # Production unless told otherwise: it refuses to start without a real SECRET_KEY.
    # Development sets DJANGO_SETTINGS_MODULE=config.settings.dev (`make demo` does).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.prod")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)

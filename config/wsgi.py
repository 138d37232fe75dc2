import os

from django.core.wsgi import get_wsgi_application

# Production unless told otherwise: it refuses to start without a real SECRET_KEY.
# Development sets DJANGO_SETTINGS_MODULE=config.settings.dev (`make demo` does).
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.prod")
application = get_wsgi_application()

"""A small Django project whose tasks run on cogworker. The database file
and Redis come from the environment the test sets (a private
redis-server, a temporary sqlite file shared by the test and the worker)."""

import os

SECRET_KEY = "test-only"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "site_config.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = ["cogworker.contrib.django", "shop"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DB", ":memory:"),
        # Two processes write the file: wait for each other's locks.
        "OPTIONS": {"timeout": 20},
    }
}

TASKS = {
    "default": {
        "BACKEND": "cogworker.contrib.django.CogworkerBackend",
        "QUEUES": ["default", "emails", "accounts"],
        "OPTIONS": {
            "redis_url": os.environ.get("SHOP_REDIS_URL", "redis://127.0.0.1:6379/0"),
            "namespace": "shop",
        },
    }
}

"""The Django app: adds the ``cogworker`` management command."""

from django.apps import AppConfig


class CogworkerConfig(AppConfig):
    name = "cogworker.contrib.django"
    label = "cogworker"
    verbose_name = "cogworker"

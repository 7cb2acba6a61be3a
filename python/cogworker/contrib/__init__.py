"""Integrations with frameworks (``cogworker.contrib.django``)."""

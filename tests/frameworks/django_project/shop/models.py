from django.db import models


class Order(models.Model):
    name = models.CharField(max_length=100)
    processed = models.BooleanField(default=False)
    note = models.CharField(max_length=100, blank=True)

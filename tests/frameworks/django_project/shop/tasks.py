"""The shop's tasks, with Django's own decorator: no cogworker in sight."""

import asyncio

from django.db import connection

try:
    from django.tasks import task
except ImportError:  # Django < 6: the backport
    from django_tasks import task

from .models import Order


@task(enqueue_on_commit=True)
def process_order(order_id, note=""):
    """Reads the order the view committed, and marks it processed."""
    order = Order.objects.get(pk=order_id)
    order.processed, order.note = True, note
    order.save()
    return {"order": order_id, "name": order.name, "note": note}


@task
def explode(message):
    raise ValueError(message)


@task
async def total(values):
    await asyncio.sleep(0.01)
    return sum(values) + await Order.objects.acount() * 0


@task(takes_context=True)
def whoami(context, label):
    return {"id": context.task_result.id, "attempt": context.attempt, "label": label}


@task(queue_name="emails")
def send_email(to):
    return f"sent to {to}"


@task
def connection_was_open():
    """Whether this process's database connection was still open when the
    task began: the worker closes it around every task (CONN_MAX_AGE 0)."""
    was_open = connection.connection is not None
    Order.objects.exists()
    return was_open


@task(retry=3)
def fails_then_waits(message):
    """Retried by cogworker (retry=3): READY again after its first failure."""
    raise RuntimeError(message)


@task(group=lambda account_id, **_: f"acct:{account_id}", group_cap=1, queue_name="accounts")
def sync_account(account_id, since=""):
    """One account's syncs one at a time (a group capped at 1)."""
    return f"synced {account_id} {since}"

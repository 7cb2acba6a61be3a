import json

from django.db import transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from .models import Order
from .tasks import process_order


@csrf_exempt
def place_order(request):
    """Saves an order and, once it is committed, enqueues its processing."""
    with transaction.atomic():
        order = Order.objects.create(name=json.loads(request.body)["name"])
        result = process_order.enqueue(order.pk, note="from the view")
    return JsonResponse({"order": order.pk, "task": result.id, "status": str(result.status)})


async def place_order_async(request):
    order = await Order.objects.acreate(name="async")
    result = await process_order.aenqueue(order.pk)
    return JsonResponse({"order": order.pk, "task": result.id})

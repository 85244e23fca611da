"""The base of every model factory in tests/: factory_boy's Django factory,
typed so that `XFactory(...)` is the model instance it creates.

factory_boy builds the instance in its metaclass's `__call__`, which mypy
does not read; the declared `__new__` tells it what calling a factory gives.
One factory per model lives in the owning app's `tests/<app>/factories.py`
(tests/test_factories.py fails on a second one); variants are traits."""

from typing import TYPE_CHECKING, Any, TypeVar

import factory.django

T = TypeVar("T")


class ModelFactory(factory.django.DjangoModelFactory[T]):
    class Meta:
        abstract = True

    if TYPE_CHECKING:
        # What the metaclass returns; mypy insists __new__ returns the class itself.
        def __new__(cls, **kwargs: Any) -> T: ...  # type: ignore[misc]

"""pasarela's errors cross to another process as they are: pickled and read back, each is the same type with the
same message and attributes, so the error a ``concurrent.futures`` or ``multiprocessing`` worker raises (or a job
another process ran) reaches its caller as that error, not as a TypeError about ``__init__``'s arguments."""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest

import pasarela
from pasarela import errors
from pasarela.cards import Card
from pasarela.sandbox.errors import SandboxError
from pasarela.testing.conformance import ConformanceError

ERRORS: dict[type[BaseException], BaseException] = {
    errors.PasarelaError: errors.PasarelaError("anything"),
    errors.PayloadError: errors.PayloadError("$.items[2].price", "NaN is not a JSON number", 17),
    errors.TimestampError: errors.TimestampError("timestamp must be 10 digits"),
    errors.CredentialsError: errors.CredentialsError("business_code is empty"),
    errors.NativeError: errors.NativeError(7, "workspace too small"),
    errors.ValidationError: errors.ValidationError("card.number", "must have 12 to 19 digits, has 4"),
    errors.ConfigurationError: errors.ConfigurationError("base_url must be https"),
    errors.TransportError: errors.TransportError("connection reset", idempotency_key="order-1042-1"),
    errors.ResponseShapeError: errors.ResponseShapeError("$.data.token", "missing"),
    errors.ApiError: errors.ApiError(422, "INVALID", "amount: too large", '{"code":"INVALID"}'),
    errors.FinalStatusError: errors.FinalStatusError(409, "FINAL", "already approved", "{}"),
    errors.QrCodeError: errors.QrCodeError(400, "QR", None, ""),
    errors.WebhookSignatureError: errors.WebhookSignatureError("signature does not match"),
    errors.StoreUnavailableError: errors.StoreUnavailableError("replay store (Redis)", "connection refused"),
    errors.PendingTransferError: errors.PendingTransferError("order-1042"),
    errors.AuthError: errors.AuthError("timestamp is 301 s from now"),
    SandboxError: SandboxError.invalid("amount.subtotalIva", "must be a number"),
    ConformanceError: ConformanceError("the endpoint did not answer"),
}


def test_every_error_class_of_pasarela_errors_has_a_case() -> None:
    classes = {value for value in vars(errors).values()
               if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__}
    assert classes <= set(ERRORS)


def _same(read: BaseException, error: BaseException) -> None:
    assert type(read) is type(error)
    assert (read.args, str(read), vars(read)) == (error.args, str(error), vars(error))


@pytest.mark.parametrize("error", list(ERRORS.values()), ids=[kind.__name__ for kind in ERRORS])
def test_an_error_pickles_as_it_is(error: BaseException) -> None:
    if sys.version_info >= (3, 11):
        error.add_note("raised in a worker")  # (kept in the error's __dict__: it crosses too)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        _same(pickle.loads(pickle.dumps(error, protocol)), error)  # noqa: S301 (its own bytes)


def test_errors_raised_in_a_worker_process_reach_the_caller_as_they_are() -> None:
    # a real worker (spawned: a fresh interpreter imports pasarela itself), as a gateway's pool or a job runner has
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        card = pool.submit(Card, name="Ana", number="4000", expiry_month="12", expiry_year="29")
        payload = pool.submit(pasarela.canonical_json, {"items": [1, float("nan")]})
        with pytest.raises(pasarela.ValidationError) as invalid:
            card.result(timeout=120)
        with pytest.raises(pasarela.PayloadError) as refused:
            payload.result(timeout=120)
    assert (invalid.value.field, invalid.value.reason) == ("card.number", "must have 12 to 19 digits, has 4")
    assert (refused.value.path, str(refused.value)) == (
        "$.items[1]", "$.items[1]: NaN is not a JSON number (JSON.stringify would write null)")

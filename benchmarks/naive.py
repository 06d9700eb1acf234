"""The naive implementation users write from the spec: each step literally, objects made per call.

Two json.dumps (one with the key for signing, one without for encrypting), hashlib, and fresh
cryptography cipher and padder objects per request. It is the baseline the benchmarks compare with
(and it is wrong for floats such as 100.0, which it writes as JavaScript would not).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
from typing import Any

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def naive_seal(business_code: str, terminal_serial: str, payload: dict[str, Any], timestamp: int,
               iv: bytes) -> tuple[dict[str, str], bytes]:
    when = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    formatted_date = when.strftime("%Y:%m:%d:%H:%M")
    key = (business_code + terminal_serial + formatted_date).ljust(32, "0")
    password = hashlib.md5(key.encode()).hexdigest()  # noqa: S324
    encoded_key = base64.b64encode(f"{password}{timestamp}".encode()).decode()
    data_with_key = dict(payload)
    data_with_key["key"] = encoded_key
    signed = json.dumps(data_with_key, separators=(",", ":"), ensure_ascii=False)
    signature = hashlib.sha512(base64.b64encode(signed.encode())).hexdigest()
    aes_key = f"{timestamp}___{password}"[:32].encode()
    padder = padding.PKCS7(128).padder()
    plaintext = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(aes_key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    headers = {"Authorization": f"Basic {signature}", "timestamp": str(timestamp),
               "Content-Type": "application/json"}
    return headers, json.dumps({"data": f"{iv.hex()}:{ciphertext.hex()}"}).encode()


def naive_open(business_code: str, terminal_serial: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The receiving side, written from the spec the same naive way (json.dumps stands in for JSON.stringify)."""
    timestamp = int(headers["timestamp"])
    when = datetime.datetime.fromtimestamp(timestamp, tz=datetime.timezone.utc)
    key = (business_code + terminal_serial + when.strftime("%Y:%m:%d:%H:%M")).ljust(32, "0")
    password = hashlib.md5(key.encode()).hexdigest()  # noqa: S324
    iv_hex, ct_hex = json.loads(body)["data"].split(":")
    aes_key = f"{timestamp}___{password}"[:32].encode()
    decryptor = Cipher(algorithms.AES(aes_key), modes.CBC(bytes.fromhex(iv_hex))).decryptor()
    padded = decryptor.update(bytes.fromhex(ct_hex)) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    payload: dict[str, Any] = json.loads(unpadder.update(padded) + unpadder.finalize())
    data_with_key = dict(payload, key=base64.b64encode(f"{password}{timestamp}".encode()).decode())
    signed = json.dumps(data_with_key, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha512(base64.b64encode(signed.encode())).hexdigest()
    if headers["Authorization"] != f"Basic {expected}":
        raise ValueError("AUTH-001")
    return payload

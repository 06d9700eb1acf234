"""What the tests share: servers they start (Redis, PostgreSQL, uvicorn workers), oracles (node), the
browser, strategies and fault injectors. Imported as ``support.<module>``: tests/conftest.py puts tests/ on sys.path."""

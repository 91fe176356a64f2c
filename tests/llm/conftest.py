"""The LLM tests use the ``fault_server``, ``scripted_server`` and ``closed_port`` fixtures of
``tests/conftest.py`` (the server itself is ``tests/llm/fault_server.py``)."""

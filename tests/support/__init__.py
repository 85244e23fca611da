"""What the tests (and perf/) share, one copy of each: the loopback LLM server
(fake_llm), the loopback S3 server (s3_server), real Celery worker processes
(workers), bounded waiting (waiting), the submission upload (uploads) and the
query count of a page (queries). The fixtures that use them stay in the
conftest.py files, where pytest finds them."""

"""Many concurrent requests on few threads and few pooled connections: every request completes.

Regression test for a deadlock found by the load benchmark: handler threads waiting for a pooled
connection while the connections waited for a free thread to close their sessions.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio.to_thread
import httpx
from reliability_support import create_small_study
from sqlalchemy import create_engine

from app import sessions
from app.db import make_sessionmaker
from app.main import create_app
from app.settings import Settings

CONCURRENT_REQUESTS = 24
#: Far below the pool's 30 s default: a deadlock shows up as 500s after this many seconds.
POOL_TIMEOUT_S = 5


def test_requests_do_not_deadlock_on_a_small_pool(sqlite_file_settings: Settings) -> None:
    study = create_small_study(sqlite_file_settings)
    app = create_app(sqlite_file_settings)
    app.state.engine.dispose()
    # One connection, two handler threads: the tightest configuration in which the deadlock can happen.
    engine = create_engine(
        sqlite_file_settings.database_url,
        pool_size=1,
        max_overflow=0,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args={"check_same_thread": False},
    )
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    with app.state.sessionmaker() as db:
        _session, token = sessions.create_session(db, app.state.session_cache, study.id, consented=True)

    async def main() -> list[Any]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            requests = [client.get(f"/api/v1/sessions/{token}") for _ in range(CONCURRENT_REQUESTS)]
            return await asyncio.wait_for(asyncio.gather(*requests), timeout=120)

    try:
        # A thread of its own: a browser test earlier in this worker may leave Playwright's event loop
        # running in the main thread, where asyncio.run refuses to start another.
        with ThreadPoolExecutor(max_workers=1) as runner:
            responses = runner.submit(asyncio.run, main()).result()
    finally:
        engine.dispose()
    assert [response.status_code for response in responses] == [200] * CONCURRENT_REQUESTS
    assert len({response.text for response in responses}) == 1

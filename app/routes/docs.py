"""The OpenAPI pages, served offline: Swagger UI (/docs) and ReDoc (/redoc) from the installed
``fastapi-offline`` package's copies of their assets, started by a local script (no CDN, no inline
script), so the pages work without internet access and under a strict Content-Security-Policy."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from ..errors import NotFoundError

__all__ = ["DOCS_ASSETS", "router"]

router = APIRouter(include_in_schema=False)

#: Asset name -> media type; the files come from the installed package, cached like plotly.js.
DOCS_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
}
LONG_CACHE = "public, max-age=31536000, immutable"


def _assets_dir() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).resolve().parent / "static"


@router.get("/docs/assets/{name}")
def docs_asset(name: str) -> FileResponse:
    media_type = DOCS_ASSETS.get(name)
    path = _assets_dir() / name
    if media_type is None or not path.is_file():
        raise NotFoundError("There is no file at this address.")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": LONG_CACHE})


@router.get("/docs")
def swagger_ui(request: Request) -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request, "docs/swagger.html", {"openapi_url": request.app.openapi_url}
    )
    return response


@router.get("/redoc")
def redoc(request: Request) -> Response:
    response: Response = request.app.state.templates.TemplateResponse(
        request, "docs/redoc.html", {"openapi_url": request.app.openapi_url}
    )
    return response

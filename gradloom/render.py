"""`wp.render` (Warp's `warp.render`): the renderer names, importable, refusing to render.

Warp's OpenGL and USD renderers are front ends to pyglet and pxr, outside what gradloom
provides. Programs import the module unconditionally and create a renderer only when asked to
draw or write a stage, so the names exist and creating one raises an error that says so; a
program run headless (or without a stage path) never touches them.
"""

from __future__ import annotations

from typing import Any, NoReturn

from .errors import GradloomError


class RendererUnavailableError(GradloomError, NotImplementedError):
    """A Warp renderer was created: gradloom does not provide them."""


def _refuse(name: str) -> NoReturn:
    raise RendererUnavailableError(
        f"wp.render.{name}: gradloom does not provide Warp's renderers (OpenGL through pyglet, "
        "USD through pxr); run the program headless or without a stage path, or write the "
        "arrays out yourself (array.numpy())"
    )


class OpenGLRenderer:
    """Warp's interactive OpenGL renderer: not provided (creating one raises)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("OpenGLRenderer")


class UsdRenderer:
    """Warp's USD stage writer: not provided (creating one raises)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("UsdRenderer")


__all__ = ["OpenGLRenderer", "RendererUnavailableError", "UsdRenderer"]

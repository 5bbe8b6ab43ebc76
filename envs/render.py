"""Drawing in JAX, for environments that render their state as an image: a canvas and a few
filled shapes, each a mask over the pixel grid, so a renderer is a pure function of the state
that jits and vmaps (a whole episode's frames are one ``vmap`` over its states).

Coordinates are pixels, ``x`` to the right and ``y`` down, of float32 pixel centres; colours
are RGB in [0, 1]. :func:`to_uint8` makes the ``uint8 [H, W, 3]`` frame that
:meth:`~jaxrl_fdg.envs.Environment.render` returns and videos are written from.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

Color = Sequence[float]

WHITE = (1.0, 1.0, 1.0)
BLACK = (0.0, 0.0, 0.0)
GREY = (0.55, 0.55, 0.55)
BROWN = (0.6, 0.4, 0.2)
BLUE = (0.25, 0.45, 0.85)
RED = (0.85, 0.25, 0.2)
GREEN = (0.2, 0.7, 0.3)

# fmt: off
PALETTE: tuple[Color, ...] = tuple(
    (r / 255, g / 255, b / 255)
    for r, g, b in (
        # matplotlib's tab10, then the light shades of tab20: twenty colours told apart easily
        (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
        (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
        (174, 199, 232), (255, 187, 120), (152, 223, 138), (255, 152, 150), (197, 176, 213),
        (196, 156, 148), (247, 182, 210), (199, 199, 199), (219, 219, 141), (158, 218, 229),
    )
)
# fmt: on
"""Colours for the channels of an image observation (:func:`channels`), in order."""


def canvas(height: int, width: int, color: Color = WHITE) -> jax.Array:
    """A ``[height, width, 3]`` float32 image of one colour."""
    return jnp.broadcast_to(jnp.asarray(color, jnp.float32), (height, width, 3))


def _pixels(image: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Pixel-centre coordinates ``(x [1, W], y [H, 1])``."""
    height, width = image.shape[:2]
    x = jnp.arange(width, dtype=jnp.float32)[None, :] + 0.5
    y = jnp.arange(height, dtype=jnp.float32)[:, None] + 0.5
    return x, y


def paint(image: jax.Array, mask: jax.Array, color: Color) -> jax.Array:
    """``image`` with ``color`` where ``mask`` ``[H, W]`` holds."""
    return jnp.where(mask[..., None], jnp.asarray(color, jnp.float32), image)


def fill_rect(image, x0, y0, x1, y1, color: Color) -> jax.Array:
    """The axis-aligned rectangle between corners ``(x0, y0)`` and ``(x1, y1)``."""
    x, y = _pixels(image)
    inside = (x >= jnp.minimum(x0, x1)) & (x <= jnp.maximum(x0, x1))
    inside = inside & (y >= jnp.minimum(y0, y1)) & (y <= jnp.maximum(y0, y1))
    return paint(image, inside, color)


def fill_circle(image, cx, cy, radius, color: Color) -> jax.Array:
    x, y = _pixels(image)
    return paint(image, (x - cx) ** 2 + (y - cy) ** 2 <= radius**2, color)


def segment(image, x0, y0, x1, y1, width, color: Color) -> jax.Array:
    """A line from ``(x0, y0)`` to ``(x1, y1)`` of ``width`` pixels, with round ends."""
    x, y = _pixels(image)
    dx, dy = x1 - x0, y1 - y0
    length2 = jnp.maximum(dx * dx + dy * dy, 1e-6)
    t = jnp.clip(((x - x0) * dx + (y - y0) * dy) / length2, 0.0, 1.0)
    distance2 = (x - (x0 + t * dx)) ** 2 + (y - (y0 + t * dy)) ** 2
    return paint(image, distance2 <= (width / 2) ** 2, color)


def grid(cells: jax.Array, colors: jax.Array, scale: int) -> jax.Array:
    """A board of integer ``cells`` ``[rows, cols]`` as an image, each cell ``scale`` pixels
    square in ``colors[cell]`` (``colors`` ``[K, 3]``)."""
    image = jnp.asarray(colors, jnp.float32)[cells]
    return jnp.repeat(jnp.repeat(image, scale, axis=0), scale, axis=1)


def channels(image: jax.Array, background: Color = BLACK) -> jax.Array:
    """An image of ``C`` channels ``[H, W, C]`` (MinAtar's observations) in colour: channel
    ``c`` in ``PALETTE[c % 20]``, drawn over the channels before it with its value clipped to
    [0, 1] as its opacity (a binary channel covers its cells), on ``background``."""
    values = jnp.clip(jnp.asarray(image, jnp.float32), 0.0, 1.0)
    height, width, count = values.shape
    out = canvas(height, width, background)
    for c in range(count):
        color = jnp.asarray(PALETTE[c % len(PALETTE)], jnp.float32)
        alpha = values[..., c, None]
        out = out * (1.0 - alpha) + color * alpha
    return out


def enlarge(image: jax.Array, side: int) -> jax.Array:
    """``image`` ``[H, W, ...]`` scaled up by the whole factor that brings its longer side
    nearest ``side`` pixels without passing it (at least 1: a larger image stays as it is),
    each pixel a square block."""
    scale = max(1, side // max(image.shape[:2]))
    return jnp.repeat(jnp.repeat(image, scale, axis=0), scale, axis=1)


def to_uint8(image: jax.Array) -> jax.Array:
    """``[H, W, 3]`` float in [0, 1] → ``uint8``."""
    return jnp.round(jnp.clip(image, 0.0, 1.0) * 255.0).astype(jnp.uint8)

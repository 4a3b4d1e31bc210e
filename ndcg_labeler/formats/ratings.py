"""Map a peer tool's ratings (Quepid 0–3, 0–10, 1–4; SRW 0.0–1.0 …) onto a test set's 0..top grades.

Three forms of mapping, each a short string a user can type on the CLI or the import page:

- empty: the ratings already are grades: whole numbers within 0..top, taken as they are;
- a scale ``LO-HI`` (or ``LO..HI``): the rating's position on that scale, linearly onto 0..top
  and rounded half up: grade = floor((r − LO) / (HI − LO) × top + 0.5); ``0-10`` onto 0–3 maps
  0,1 → 0; 2,3,4,5 → 1 or 2 …; ratings outside LO..HI are refused;
- explicit pairs ``rating=grade,…`` such as ``1=0,2=1,3=2,4=3``; a rating not listed is refused.

The mapping never guesses: a rating it cannot place is an error that names the way to fix it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_NUMBER = r"-?\d+(?:\.\d+)?"
_SCALE_RE = re.compile(rf"^\s*({_NUMBER})\s*(?:\.\.|-|–)\s*({_NUMBER})\s*$")
_PAIR_RE = re.compile(rf"^\s*({_NUMBER})\s*=\s*(\d+)\s*$")

HINT = (
    "give a rating map: a scale such as '0-10' (ratings rescaled onto the test set's grades) "
    "or pairs such as '1=0,2=1,3=2,4=3'"
)


class RatingMapError(ValueError):
    """A rating map that cannot be read, or a rating it cannot place (the reason says why)."""


@dataclass(frozen=True)
class RatingMap:
    """How a peer's ratings become grades 0..top (see the module docstring)."""

    top: int
    low: float | None = None
    high: float | None = None
    pairs: dict[float, int] = field(default_factory=dict)
    text: str = ""

    @classmethod
    def parse(cls, text: str | None, top: int) -> RatingMap:
        """Read a mapping string ('' = ratings are grades; 'LO-HI'; 'r=g,…') for grades 0..top."""
        text = (text or "").strip()
        if not text:
            return cls(top)
        scale = _SCALE_RE.match(text)
        if scale:
            low, high = float(scale.group(1)), float(scale.group(2))
            if not low < high:
                raise RatingMapError(
                    f"rating scale '{text}': the low end must be below the high end"
                )
            return cls(top, low, high, text=text)
        pairs: dict[float, int] = {}
        for part in text.split(","):
            match = _PAIR_RE.match(part)
            if match is None:
                raise RatingMapError(f"cannot read the rating map '{text}': {HINT}")
            rating, grade = float(match.group(1)), int(match.group(2))
            if grade > top:
                raise RatingMapError(
                    f"rating map '{text}' maps {match.group(1)} to grade {grade}, "
                    f"outside this test set's scale 0–{top}"
                )
            if rating in pairs and pairs[rating] != grade:
                raise RatingMapError(f"rating map '{text}' maps {match.group(1)} twice")
            pairs[rating] = grade
        return cls(top, pairs=pairs, text=text)

    def grade(self, rating: float) -> int:
        """The grade of one rating; RatingMapError when the mapping cannot place it."""
        shown = _show(rating)
        if self.pairs:
            if rating not in self.pairs:
                listed = ", ".join(_show(r) for r in sorted(self.pairs))
                raise RatingMapError(f"rating {shown} is not in the rating map (it lists {listed})")
            return self.pairs[rating]
        if self.low is not None and self.high is not None:
            if not self.low <= rating <= self.high:
                raise RatingMapError(f"rating {shown} is outside the rating scale {self.text}")
            position = (rating - self.low) / (self.high - self.low) * self.top
            return min(self.top, math.floor(position + 0.5 + 1e-9))
        if rating != int(rating) or not 0 <= rating <= self.top:
            raise RatingMapError(
                f"rating {shown} is not a grade of this test set's scale 0–{self.top}: {HINT}"
            )
        return int(rating)


def _show(rating: float) -> str:
    """A rating as the user wrote it, near enough: 3 rather than 3.0."""
    return str(int(rating)) if rating == int(rating) else repr(rating)

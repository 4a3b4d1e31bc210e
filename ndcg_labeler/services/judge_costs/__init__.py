"""What machine judges cost: prices per million tokens, tokens and dollars spent, and the
estimate shown before a run starts."""

from .estimate import Estimate, counted, estimate_run, estimate_runs, first_render_error
from .prices import (
    MAX_PRICE,
    budget_error,
    check_price,
    money,
    price_error,
    read_budget,
    set_prices,
    spending,
    unpriced,
)

__all__ = [
    "MAX_PRICE",
    "Estimate",
    "budget_error",
    "check_price",
    "counted",
    "estimate_run",
    "estimate_runs",
    "first_render_error",
    "money",
    "price_error",
    "read_budget",
    "set_prices",
    "spending",
    "unpriced",
]

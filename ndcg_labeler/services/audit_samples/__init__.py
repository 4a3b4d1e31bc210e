"""Judges' audit samples: a seeded uniform draw of a test set's queries for people to grade in
full, and which of them are audited (the labeled set of prediction-powered estimates)."""

from .sample import MAX_SEED, AuditState, audit_state, draw_audit, draw_order

__all__ = ["MAX_SEED", "AuditState", "audit_state", "draw_audit", "draw_order"]

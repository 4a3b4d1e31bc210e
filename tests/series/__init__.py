"""Run series, trends, schedules and alerts (issue 30, items 3 and 4)."""

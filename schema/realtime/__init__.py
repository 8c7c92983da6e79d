"""Subscriptions: the payload types and the per-event reads behind them."""

"""Elicitation Studio web app: FastAPI shell around the `elicitation` core."""

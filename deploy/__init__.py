"""Deployment helpers: N dashboard replicas behind a sticky nginx (``python -m deploy.replicas``)."""

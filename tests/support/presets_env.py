"""Shared by tests that point RLPLAN_PRESETS_DIR somewhere else: forget every cached preset list."""

from __future__ import annotations


def clear_preset_caches() -> None:
    """Clear the calculator's preset caches, the UI's option lists and Streamlit's data cache."""
    import streamlit as st

    from calculator.inputs.presets import clear_cache
    from ui import options

    clear_cache()
    options.gpu_ids.cache_clear()
    options.model_ids.cache_clear()
    st.cache_data.clear()

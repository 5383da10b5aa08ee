"""The MI Lens app's support package: the one seam between the Streamlit pages and ``mi_core``.

- ``domains``: the domain registry (Sudoku 9x9, the exact 4x4 oracle), puzzles, presets and uploads;
- ``core``: calls into ``mi_core`` (torch) that return plain numpy results; no streamlit;
- ``support``: model loading (``st.cache_resource``) and cached results (``st.cache_data``);
- ``widgets``: shared input widgets (puzzle picker, cell picker, strategy picker, frame navigator);
- ``figures``, ``graph``, ``exports``, ``benchmarks``, ``texts``: plotly figures, the dependency graph,
  downloads, benchmark tables and explanations; none of them imports streamlit or torch.

Pages import ``support``, ``widgets``, ``figures``, ``exports`` and ``texts`` only.
"""

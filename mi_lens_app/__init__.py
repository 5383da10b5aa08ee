"""The MI Lens app's support package: the one seam between the Streamlit pages and ``mi_core``.

- ``domains``: the domain registry (Sudoku 9x9, the exact 4x4 oracle), puzzles, presets and uploads;
- ``core``, ``traces``: calls into ``mi_core`` (torch) that return plain numpy results (``traces``: a decode, frame by
  frame); no streamlit;
- ``support``: model loading (``st.cache_resource``) and cached results (``st.cache_data``); ``warm``: loading them
  as the server starts; ``figure_cache``: figures built once and shared by every session;
- ``widgets``: shared input widgets (puzzle picker, cell picker, strategy picker, frame navigator);
- ``frame``: what every page sits in (config, title, the links to the other views, the note on a link, layout CSS);
- ``decode_views``: the Decoding page's view of one frame (grid or strip, header, step table, result, selector);
- ``figures``, ``protein_figures``, ``strips``, ``grid_svg``, ``charts``, ``graph``, ``exports``, ``benchmarks``,
  ``texts``: plotly figures of grids and MI maps, of sequences, sequence strips, SVG grids, the Benchmarks charts,
  the dependency graph, downloads, benchmark tables and explanations; none of them imports streamlit or torch;
- ``screen``: the screen a page is on (a phone, a touch screen) and how wide a chart title's line may be there;
- ``links``: the page's state in its address, to share.

Pages import these, ``support``, ``figure_cache``, ``widgets``, ``frame`` and ``decode_views``; never ``mi_core``
or torch.
"""

# plotly reads pandas from sys.modules without importing it (``is_homogeneous_array``), so a figure built in one
# page's thread while another thread (the warm-up, or the first Decoding page) was importing pandas met the
# half-initialised module: "partially initialized module 'pandas' has no attribute 'Series'" on most first MI maps
# of a freshly started ``streamlit run app.py`` under a class. Imported here, under this package's import lock, pandas
# is whole before any module of the app can build a figure.
import pandas  # noqa: F401

"""MI Lens core: masked diffusion models, their pairwise mutual information, and decoders.

Importing this package has no side effects; it never imports streamlit.
"""

__version__ = "0.1.0"

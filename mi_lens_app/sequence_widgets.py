"""Sidebar widgets for sequence inputs: for a protein a preset, a pasted sequence or FASTA, or an upload; for
another sequence domain one of its examples, a typed state or a file of states; which positions to mask, and
the window long sequences are drawn in. Their state lives in the URL like the grid
pickers' (see :mod:`mi_lens_app.widgets`)."""

from __future__ import annotations

import streamlit as st

from mi_core.options import counted, plural
from mi_lens_app import links, screen, support, texts
from mi_lens_app.domains import Domain, Puzzle
from mi_lens_app.protein_figures import WINDOW
from mi_lens_app.sequences import MASK_MODES, Masking

SEQUENCE_SOURCES = ("preset", "paste", "upload")
MASK_CHOICES = ("default", "positions", "rate")
links.choices("psrc", lambda: list(SEQUENCE_SOURCES))
links.choices("mask_mode", lambda: list(MASK_CHOICES))
BIND = links.BIND

SIZES = [60, WINDOW, 200]  # the window sizes offered, residues
PHONE_SIZE = 30  # a phone's window: 60 residues across its ~330-px plots ran their letters together (3.8 px each)


def sequence_picker(domain: Domain) -> Puzzle | None:
    """Sidebar widgets choosing a protein (preset, pasted sequence or FASTA, upload) and its masking; for another
    sequence domain, one of its states (:func:`state_picker`)."""
    if not texts.speaks_protein(domain):
        return state_picker(domain)
    side = st.sidebar
    src = side.radio("Sequence from", SEQUENCE_SOURCES, key="psrc", bind=BIND, horizontal=True)
    if src == "preset":
        found = _sequence_preset(domain)
    elif src == "paste":
        found = _sequence_pasted(hasattr(domain, "csv_records"))
    else:
        found = _sequence_uploaded(domain)
    if found is None:
        return None
    text, name, default = found
    regions = " or regions: cdr3, cdrs, fr2" if hasattr(domain, "named_positions") else ""
    masking = mask_picker(default, "the preset's" if src == "preset" else "only _ and X", example=f"5-20,33{regions}")
    result = support.attempt_input(support.protein_puzzle, domain, text, masking, name,
                                   what="This sequence cannot be used", subject="sequence")
    if result is None:
        return None
    pz, count, dna = result
    if dna:
        side.warning("This looks like DNA (only A, C, G and T): the model reads it as a protein made of alanine, "
                     "cysteine, glycine and threonine. Paste the protein it codes for instead.", icon=":material/help:")
    masked = len(pz.blanks)
    side.caption(f"{pz.length} residues, {masked} masked" + (f"; first of {count} records" if count > 1 else "")
                 + ".")
    found = getattr(domain, "annotation", lambda tokens: {})(pz.solution or pz.digits)
    if found.get("regions"):  # antibodies: where the CDRs are (they are marked on the maps too)
        side.caption(cdr_caption(domain, found, src == "preset"))
    elif found.get("unplaced"):
        side.caption(f"No CDRs marked: {found['unplaced']}, so they cannot be placed.")
    return pz


def cdr_caption(domain: Domain, found: dict, preset: bool) -> str:
    """Where an antibody's CDRs are, as residue numbers of the sequence shown (1-based, as the maps label them;
    not Kabat numbers: CDR-H3 is Kabat H95-H102, here e.g. 99-109), and the credits: the presets' source only
    under a preset (a pasted or uploaded antibody is the user's own)."""
    cdrs = ", ".join(f"{r} {a}-{b}" for r, (a, b) in found["regions"].items() if r.startswith("CDR"))
    credits = [getattr(domain, "credit", "")] + ([getattr(domain, "preset_credit", "")] if preset else [])
    return (f"{'Heavy' if found['chain'] == 'H' else 'Light'} chain; Kabat-defined CDRs at residues {cdrs}. "
            + "; ".join(c for c in credits if c) + ".")


def state_picker(domain: Domain) -> Puzzle | None:
    """Sidebar widgets choosing a state of a sequence domain that is not a protein: one of its ``examples``, a
    pasted state (one character a position) or a line of an uploaded text file, and its masking."""
    side = st.sidebar
    position, value = domain.nouns
    src = side.radio("State from", SEQUENCE_SOURCES, key="psrc", bind=BIND, horizontal=True)
    found = None
    if src == "preset" and not domain.examples:
        side.info(f"No example states ship with {domain.label}; paste one.")
    elif src == "preset":
        names = [name for name, _ in domain.examples]
        name = side.selectbox("Example", names, key="ppreset", bind=BIND)
        found = domain.examples[names.index(name)][1], name
    elif src == "paste":
        bind, too_long = links.text_bind("seq")
        text = side.text_area(f"State, one character a {position}: {' '.join(domain.alphabet)}, or "
                              f"{domain.mask_char} for a masked one", key="seq", bind=bind, height=110)
        if too_long:
            side.warning(too_long, icon=":material/link_off:")
        if text.strip():
            found = text, ""
        else:
            side.info(f"Paste a state of {len(domain.alphabet)} {plural(value)} and {domain.mask_char} to start.")
    else:
        file = side.file_uploader("Text file, one state a line (up to 1 MiB)", type=["txt"], key="pupload",
                                  max_upload_size=1)
        read = file and support.attempt_input(support.states_upload, file.name, file.getvalue(), domain.key,
                                              what="Cannot read the file")
        states, skipped = read or ([], [])
        if skipped:
            side.warning(f"{len(skipped)} line{'s' if len(skipped) > 1 else ''} left out; the first: {skipped[0]}",
                         icon=":material/warning:")
        if states:
            row = side.selectbox(f"State ({len(states)} in the file)", range(len(states)), key="pupload_row",
                                 format_func=lambda i: f"{states[i][0]}: {states[i][1][:24]}")
            found = states[row][1], f"{file.name} {states[row][0]}"
        elif file is None:
            side.info("Upload a text file of states, one a line.")
    if found is None:
        return None
    masking = mask_picker(Masking(), f"the state's own ({domain.mask_char})", position)
    pz = support.attempt_input(support.state_puzzle, domain, found[0], masking, found[1],
                               what="This state cannot be used")
    if pz is not None:
        side.caption(f"{counted(pz.length, position)}, {len(pz.blanks)} masked.")
    return pz


SHOWN_NAME = 30  # characters of a preset's name a 1024 px sidebar's box shows


def _sequence_preset(domain: Domain) -> tuple[str, str, Masking] | None:
    presets = support.protein_presets(domain.key)
    if not presets:
        st.sidebar.warning(f"No {domain.short} presets shipped (assets/examples/{domain.key}_presets.json is missing).")
        return None
    names = [p.name for p in presets]
    title = "Preset (antibodies of Jain et al. 2017)" if domain.key == "antibody" else "Preset (CATH S40 domains)"
    name = st.sidebar.selectbox(title, names, key="ppreset", bind=BIND)
    if len(name) > SHOWN_NAME:  # the box cuts a long name (the masking) at the sidebar's width
        st.sidebar.caption(name)
    chosen = presets[names.index(name)]
    return chosen.sequence, chosen.cath_id or chosen.name, chosen.masking


def _sequence_pasted(csv: bool = False) -> tuple[str, str, Masking] | None:
    bind, too_long = links.text_bind("seq")
    kinds = "Sequence, FASTA or CSV (name,vh,vl)" if csv else "Sequence or FASTA"
    text = st.sidebar.text_area(f"{kinds} (the first record is used); _ or X marks a masked residue",
                                key="seq", bind=bind, height=110)
    if too_long:
        st.sidebar.warning(too_long, icon=":material/link_off:")
    if not text.strip():
        st.sidebar.info("Paste a protein sequence or FASTA to start, or pick a preset.")
        return None
    return text, "", Masking()


def _sequence_uploaded(domain) -> tuple[str, str, Masking] | None:
    side = st.sidebar
    csv = hasattr(domain, "csv_records")  # antibodies: a name,vh,vl file as the command line reads it
    file = side.file_uploader(f"FASTA{' or CSV (name,vh,vl)' if csv else ''} file (.fasta, .fa, .faa, .txt"
                              f"{', .csv' if csv else ''}; up to 1 MiB)",
                              type=["fasta", "fa", "faa", "txt", *(["csv"] if csv else [])], key="pupload",
                              max_upload_size=1)
    if file is None:
        side.info(f"Upload a FASTA{' or CSV' if csv else ''} file; uploaded sequences stay out of the link until you "
                  "copy one into it.")
        return None
    read = support.attempt_input(support.fasta_upload, file.name, file.getvalue(), domain.key,
                                 what="Cannot read the file")
    if not read:
        return None
    records, total, left_out = read
    usable = total - len(left_out)
    count = f"the first {len(records)} of {usable}" if usable > len(records) else f"{len(records)}"
    row = side.selectbox(f"Sequence ({count} in the file)", range(len(records)), key="pupload_row",
                         format_func=lambda i: f"{records[i].name[:30]} ({records[i].length} aa)")
    if left_out:
        side.caption(f"{counted(len(left_out), 'record')} of the file left out (not a sequence here): "
                     f"{left_out[0]}" + (f"; and {len(left_out) - 1} more" if len(left_out) > 1 else ""))
    record = records[row]
    fasta = f">{record.name}\n{record.text()}\n"
    side.button("Put this sequence in the link", on_click=links.put_in_link, args=("psrc", "paste", "seq", fasta),
                help="switches to 'paste' with this sequence, so the page's URL reopens it")
    return fasta, record.name, Masking()


def window_picker(length: int, key: str = "win", where=None, masked: list[int] = (),
                  size: int | None = None) -> tuple[int, int]:
    """``(start, size)`` of the residue window sequences longer than 60 are drawn in: 60 residues unless a wider
    window is picked (an antibody's 120 letters, all drawn by default, were 9 px tall on a 1024-px projector; 60 are
    14 px); on a phone, sequences longer than 30 in :data:`PHONE_SIZE` (a narrower window is offered everywhere, so
    a phone's link opens anywhere). A window opens a few residues before the first of the ``masked`` positions, and
    again on another sequence or mask. ``size``: the window it starts at (one of :data:`SIZES`)."""
    size = size or (PHONE_SIZE if screen.on_phone() else SIZES[0])
    if length <= size:
        return 0, length
    where = where or st
    box, slider = where.columns([1, 3])  # the slider only when the window is narrower than the sequence
    sizes = [PHONE_SIZE, *SIZES]
    size = box.selectbox("Window", sizes, index=sizes.index(size), key=f"{key}_size", bind=BIND,
                        help="residues drawn at once: fewer draw larger letters; long sequences stay responsive")
    if size >= length:
        return 0, length
    last = max(length - size + 1, 2)
    links.clamp_number(key, 1, last, integer=True)
    if key in st.session_state:  # kept: another window size is another slider to Streamlit, which would take its default
        st.session_state[key] = min(int(st.session_state[key] or 1), last)  # and a smaller sequence's end
    opening = min(max((masked[0] if len(masked) else 0) - 5, 0) + 1, last)  # 1-based; a VH's CDR-H3: 99-109
    links.restart_on(key, (length, tuple(masked)), opening)
    start = slider.slider(f"Residues shown from (of {length})", 1, last, opening, key=key, bind=links.bound(key))
    return int(start) - 1, int(size)


def mask_picker(default: Masking, default_name: str, noun: str = "residue", example: str = "5-20,33") -> Masking:
    """Which positions (each a ``noun``) to mask: the default (a preset's, or the input's own), 1-based positions (as
    ``example`` shows), or a rate."""
    side = st.sidebar
    kept = "Any _ or X in the sequence stays masked." if noun == "residue" else "Any masked one stays masked."
    mode = side.radio("Mask", MASK_CHOICES, key="mask_mode", bind=BIND, horizontal=True,
                      help=f"which {plural(noun)} the model is asked to fill: default is {default_name} masking; "
                           f"positions are 1-based (5-20,33); rate masks that share at random. {kept}")
    if mode == "positions":
        spec = side.text_input(f"Mask positions (1-based, e.g. {example})", key="mask", bind=BIND)
        if spec.strip():
            return Masking("positions", positions=spec)
        # a prompt, not an error ("no residue is masked", twice on the page) while the box is still empty
        side.info(f"Type the {plural(noun)} to mask (e.g. {example}); until then the default masking, {default_name}, "
                  "stands.")
    elif mode == "rate":
        c1, c2 = side.columns(2)
        links.clamp_number("mask_rate", 0.05, 0.5)
        links.clamp_number("mask_seed", 0, links.APP_SEED_MAX, integer=True)
        rate = c1.slider("Mask rate", 0.05, 0.5, 0.15, step=0.05, key="mask_rate", bind=links.bound("mask_rate"))
        seed = c2.number_input("Mask seed", min_value=0, max_value=links.APP_SEED_MAX, value=0, step=1, key="mask_seed",
                               bind=links.bound("mask_seed"), help=links.SEED_HELP)
        return Masking("rate", rate=float(rate), seed=int(seed))
    return default if default.mode in MASK_MODES else Masking()

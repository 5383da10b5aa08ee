"""Former home of the order networks, now :mod:`mi_core.decoding.selector` (the ``learned`` strategy runs
the selector, so it sits with decoding). Kept so old imports still work.
"""

from mi_core.decoding.selector import (  # noqa: F401
    LOGP_FEATURE,
    N_POSTERIOR_FEATURES,
    N_SELECTOR_FEATURES,
    OrderNetConfig,
    PositionNet,
    check_order_net_fits,
    load_order_net,
    make_order_nets,
    model_signature,
    net_domain,
    pick_positions,
    posterior_features,
    save_order_net,
    select_probabilities,
    selector_features,
)

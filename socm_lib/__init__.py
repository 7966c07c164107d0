"""socm_lib: measure second-order collapse by mean pooling (SOCM) in text embeddings."""
from .bures import bures_wasserstein_sq, fidelity, gaussian_w2_sq, psd_sqrt
from .pairs import InsufficientMemoryError, PairResult, SOCMResult, all_pairs, socm, socm_pairs
from .summary import PairSummary, socm_summary
from .stats import (
    avg_intra_cosine,
    cloud_covariance,
    cloud_mean,
    concentration_ratio,
    normalize_cloud,
    spread,
)
from .data import (
    PAIR_KINDS,
    corpus,
    hf_texts,
    labelled_pairs,
    read_lines,
    read_msmarco_passages,
    read_sick,
    read_stsb,
    sample_texts,
    shared_data_dir,
)
from .encoders import REGISTRY, Encoder, ModelUnavailableError, load_encoder
from .extract import token_embeddings
from .display import device_report, fixed, fmt
from .layers import layer_profile, plot_layer_profile
from .plots import clouds_2d, extreme_pairs_table, pair_projection, scatter_dmu_dsigma, socm_surface
from .protocol import Measurement, measure, paper_protocol

__version__ = "0.1.0"

"""What ``-m generic`` changes, read from two listings (verify/mask_modes.py).

The names are written here (and, on one corpus tree, listed by generate.py itself); the
expectations are read off them by hand, not from the code under test.
"""

from __future__ import annotations

from sphinxext_fmha.verify.mask_modes import compare_mask_modes

from helpers.analysis_fixtures import shared_listing

# Same length names: the mask word of one kernel stands where a feature word of another
# stands. Only the words between the same neighbours are the mask vocabulary.
SIMPLIFIED = [
    "k_d64_fp16_nbias_nmask_ndropout.cpp",
    "k_d64_fp16_nbias_mask_ndropout.cpp",
    "k_d64_fp16_nmask_dropout_wg16.cpp",   # the mask word one place earlier
    "k_d64_fp16_mask_dropout_wg16.cpp",
    "k_d64_fp16_dbias_nmask_dropout.cpp",
]
GENERIC = [
    "k_d64_fp16_nbias_nmask_ndropout.cpp",
    "k_d64_fp16_nbias_mc_ndropout.cpp",
    "k_d64_fp16_nbias_mg_ndropout.cpp",
    "k_d64_fp16_nmask_dropout_wg16.cpp",
    "k_d64_fp16_mc_dropout_wg16.cpp",
    "k_d64_fp16_mg_dropout_wg16.cpp",
    "k_d64_fp16_dbias_nmask_dropout.cpp",
]


def test_feature_words_in_the_mask_place_of_other_names_are_not_mask_values():
    modes = compare_mask_modes("simplified", SIMPLIFIED, "generic", GENERIC)
    assert modes.only_this == ["mask"]
    assert modes.only_other == ["mc", "mg"]
    assert modes.hard_coded == {}


def test_a_mask_value_set_whatever_the_mode_is_reported():
    # this mode has no no-mask kernel next to its masked one; 'nmask' is one of the other
    # mode's mask words and is carried here by fewer kernels (only the dbias one)
    simplified = ["k_d64_fp16_nbias_mask_ndropout.cpp", "k_d64_fp16_dbias_nmask_ndropout.cpp"]
    generic = GENERIC[:3] + ["k_d64_fp16_dbias_nmask_ndropout.cpp"]
    modes = compare_mask_modes("simplified", simplified, "generic", generic)
    assert modes.hard_coded == {"nmask": 1}


def test_words_left_out_when_off_are_no_mask_values():
    """2024 CK's fwd writes a feature word only when it is on (``_bias``, ``_lse``) and,
    in simplified mode, ``_mask`` only when masked: a feature word then stands where
    the generic ``_mc`` stands in another name. It also stands beside ``_mc`` in some
    name, which a mask value never does: under ``-m generic`` only the mask words
    change."""
    simplified = ["k_d64_psddv.cpp", "k_d64_psddv_mask.cpp", "k_d64_psddv_bias.cpp",
                  "k_d64_psddv_bias_mask.cpp", "k_d64_psddv_lse.cpp", "k_d64_psddv_mask_lse.cpp"]
    generic = ["k_d64_psddv.cpp", "k_d64_psddv_mc.cpp", "k_d64_psddv_mg.cpp",
               "k_d64_psddv_bias.cpp", "k_d64_psddv_bias_mc.cpp", "k_d64_psddv_bias_mg.cpp",
               "k_d64_psddv_lse.cpp", "k_d64_psddv_mc_lse.cpp", "k_d64_psddv_mg_lse.cpp",
               "k_d64_psddv_bias_lse.cpp", "k_d64_psddv_bias_mc_lse.cpp"]
    modes = compare_mask_modes("simplified", simplified, "generic", generic)
    assert modes.only_this == ["mask"] and modes.only_other == ["mc", "mg"]
    assert modes.hard_coded == {}


def test_flash_attn_283_bwd_has_no_hard_coded_mask_value(corpus_root):
    root = corpus_root("flash-attn-2.8.3")
    simplified = sorted(shared_listing(root, "bwd"))
    generic = sorted(shared_listing(root, "bwd", "-m", "generic"))
    modes = compare_mask_modes("simplified", simplified, "generic", generic)
    # read by hand from the two listings: 'mask' becomes 'mc' and 'mg'
    assert modes.only_this == ["mask"]
    assert modes.only_other == ["mc", "mg"]
    assert modes.hard_coded == {}

//! What an attacker holding 30% of the space gets, over two thousand
//! slots ([`spacevault_bench::chain`]: ten farmers of one k = 16 plot each,
//! three of them the attacker's, under the chain's real eligibility,
//! targets and fork choice, with an ideal network):
//!
//! - producing honestly, it makes about 30% of the blocks;
//! - withholding (Eyal and Sirer's selfish mining), it makes fewer: had
//!   rivals of two slots gone to the earlier slot, it would have won every
//!   race it started and taken some 38% of the blocks (this test failed
//!   then, at 39.5%); with the block seen first kept, it takes about 27%
//!   (29.2% here);
//! - on a private chain from the genesis, it never outweighs an honest
//!   chain past its first dozen blocks.
//!
//! Choosing among its eligible proofs gains it nothing to try: a slot's
//! challenge comes from the proof of time alone ([`chain::stamp`] takes
//! no block), so no choice of the attacker's moves the challenges after
//! it.
//!
//! The runs are deterministic (fixed plots, fixed slots); the tolerances
//! are what the statistics of a run this long allow, so the assertions
//! would hold for other plots and slots too.

use spacevault_bench::chain::{self, ChainOptions};

fn options(dir: &std::path::Path) -> ChainOptions {
    ChainOptions {
        dir: dir.to_path_buf(),
        ..ChainOptions::default()
    }
}

/// 30% and `sigmas` standard deviations of a binomial count of `blocks`.
fn bound(blocks: u64, sigmas: f64) -> f64 {
    let p: f64 = 0.3;
    sigmas * (p * (1.0 - p) / blocks as f64).sqrt()
}

#[test]
fn an_attacker_with_30_percent_of_the_space_gets_its_share_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path());
    let farmers = chain::farmers(&options).unwrap();
    assert_eq!(farmers.iter().filter(|f| f.attacker).count(), 3);

    let fair = chain::honest(&options, &farmers).unwrap();
    eprintln!("producing honestly: {fair:?}");
    // About one block every two slots, as the target wants.
    assert!((800..=1200).contains(&fair.blocks), "{fair:?}");
    let tolerance = bound(fair.blocks, 4.0);
    assert!(
        (fair.attacker_share - 0.3).abs() < tolerance,
        "{:.1}% of the blocks, outside 30% ± {:.1}",
        fair.attacker_share * 100.0,
        tolerance * 100.0
    );

    let selfish = chain::selfish(&options, &farmers).unwrap();
    eprintln!("withholding: {selfish:?}");
    assert!(selfish.races > 0);
    // Withholding pays less than producing honestly: with every tie lost
    // about 27% of the blocks (Eyal and Sirer); with every tie won, about
    // 38%, far beyond the bound.
    let tolerance = bound(selfish.blocks, 3.0);
    assert!(
        selfish.attacker_share < 0.3 + tolerance,
        "withholding took {:.1}% of the blocks, past 30% + {:.1}",
        selfish.attacker_share * 100.0,
        tolerance * 100.0
    );
}

#[test]
fn a_private_chain_of_30_percent_never_outweighs_the_honest_one() {
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path());
    let farmers = chain::farmers(&options).unwrap();
    let private = chain::private(&options, &farmers).unwrap();
    eprintln!("{private:?}");
    // A random walk up 3 steps in 10 and down 7: from k blocks behind it
    // ever gets ahead with probability (3/7)^(k+1); past the first dozen
    // honest blocks, below 1e-4.
    assert!(
        private.heavier_after.iter().all(|&(_, behind)| behind < 12),
        "the private chain outweighed the honest one of {:?}",
        private.heavier_after
    );
    // Its weight is about 3/7 of the honest chain's.
    assert!(private.weight_ratio < 0.5, "{}", private.weight_ratio);
}

//! The farmer's page, loaded in headless Chromium (Debian's `chromium`,
//! which CI installs): it shows the chain's height, this vault's plots and
//! their lookup time against the proof window, recent blocks and peers.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

/// Chromium's headless DOM dump of `url` after its scripts ran, or none
/// where no Chromium is installed (CI sets SPACEVAULT_REQUIRE_CHROMIUM).
fn dump_dom(url: &str, screenshot: Option<&std::path::Path>) -> Option<String> {
    let exe = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(exe) = exe else {
        assert!(
            std::env::var_os("SPACEVAULT_REQUIRE_CHROMIUM").is_none(),
            "SPACEVAULT_REQUIRE_CHROMIUM is set and no chromium is installed"
        );
        eprintln!("skipped: no chromium installed");
        return None;
    };
    let profile = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        format!("--user-data-dir={}", profile.path().display()),
        "--virtual-time-budget=4000".into(),
    ];
    match screenshot {
        Some(path) => {
            args.push(format!("--screenshot={}", path.display()));
            args.push("--window-size=1100,900".into());
        }
        None => args.push("--dump-dom".into()),
    }
    args.push(url.to_string());
    let out = output_within(Command::new(exe).args(&args), Duration::from_secs(120));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The text of the element with `id`, in a dumped DOM.
fn text_of(dom: &str, id: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let rest = &dom[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest.find('<').filter(|&c| c > open).unwrap_or(open);
    rest[open..close].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_chain_the_plots_and_the_peers() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..2).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    let nodes = network_at(&spec, &files, true, 3).await;
    let url = format!("http://{}/", nodes[0].api_addr().unwrap());
    let dom = tokio::task::spawn_blocking({
        let url = url.clone();
        move || dump_dom(&url, None)
    })
    .await
    .unwrap();
    if let Some(dom) = dom {
        let height: u64 = text_of(&dom, "height")
            .parse()
            .expect("the script filled in the height");
        assert!(height >= 3, "{height}");
        assert_eq!(text_of(&dom, "peers"), "1");
        let state = text_of(&dom, "state");
        assert!(
            ["following", "syncing"].contains(&state.as_str()),
            "{state}"
        );
        let chain = text_of(&dom, "chain");
        assert!(chain.contains("slots of 300 ms"), "{chain}");
        let produced: u64 = text_of(&dom, "produced").parse().expect("a count");
        let slot: u64 = text_of(&dom, "slot")
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .expect("the slot");
        assert!(produced <= slot, "{produced} blocks in {slot} slots");
        assert!(text_of(&dom, "blob-bytes").ends_with('B'), "sizes in units");
        // Producers by peer id, as the peers are, the whole ids on hover.
        assert!(dom.contains("<td title=\"farmer key "), "ids on hover");
        assert!(dom.contains(">peer 12D3…"), "producers by peer id");
        assert!(
            dom.contains(&files[0].plots.display().to_string()),
            "the plot is listed"
        );
        let note = text_of(&dom, "lookup-note");
        assert!(note.contains("ms slot"), "{note}");
        assert!(dom.matches("<tr>").count() >= 4, "recent blocks are listed");
        assert!(text_of(&dom, "farmer").contains(&hex::encode(files[0].key.public())));
        // A picture, for people; kept where SPACEVAULT_PAGE_SCREENSHOT says.
        if let Some(path) = std::env::var_os("SPACEVAULT_PAGE_SCREENSHOT") {
            let path = std::path::PathBuf::from(path);
            tokio::task::spawn_blocking(move || dump_dom(&url, Some(&path)))
                .await
                .unwrap();
        }
    }
    for n in nodes {
        n.stop().await;
    }
}

//! The plot file's life on disk: names, free space, the temporary file and
//! the durable rename that makes it a plot.

use super::PlotError;
use crate::aligned::AlignedBuf;
use crate::format::Header;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

pub const PLOT_EXTENSION: &str = "plot";
pub const TEMP_EXTENSION: &str = "tmp";
const NAME_PREFIX: &str = "spacevault-k";

/// `spacevault-k{k}-{plot id in hex}.plot`: unique per plot, and says its size.
pub fn plot_file_name(k: u8, plot_id: &[u8; 32]) -> String {
    format!("{NAME_PREFIX}{k}-{}.{PLOT_EXTENSION}", hex::encode(plot_id))
}

pub(crate) fn temp_path(final_path: &Path) -> PathBuf {
    let mut name = final_path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(TEMP_EXTENSION);
    final_path.with_file_name(name)
}

fn is_our_temp(name: &str) -> bool {
    name.starts_with(NAME_PREFIX) && name.ends_with(&format!(".{TEMP_EXTENSION}"))
}

/// An exclusive `flock` on a directory, held while temp files in it are
/// created or removed, so that a cleanup never sees a temp file between its
/// creation and its owner's lock. Where the file system cannot lock a
/// directory (some network file systems), nothing is held: the temp files'
/// own locks still keep live files from a cleanup, but no longer close the
/// moment between create and lock.
struct DirLock {
    _held: Option<File>,
}

fn lock_dir(dir: &Path) -> DirLock {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(f) = File::open(dir) else {
        return DirLock { _held: None };
    };
    loop {
        // SAFETY: flock on a valid descriptor has no memory effects.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return DirLock { _held: Some(f) };
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return DirLock { _held: None };
        }
    }
}

/// Creates `path`, which must not exist, and takes its lock, as one step
/// as far as [`remove_stale_temps`] can tell. With `direct`, the file is
/// switched to O_DIRECT where its file system allows.
pub(crate) fn create_locked(path: &Path, direct: bool) -> io::Result<File> {
    let _dir = lock_dir(path.parent().unwrap_or(Path::new(".")));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    if !try_lock(&file) {
        // Only a process outside spacevault could hold it already.
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "locked by another process the moment it was created",
        ));
    }
    if direct {
        set_direct(&file);
    }
    Ok(file)
}

/// Switches an open file to O_DIRECT where its file system allows (else it
/// stays buffered). Opening with O_DIRECT instead could create the file and
/// then fail on a file system without it, leaving the name taken.
fn set_direct(file: &File) {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a valid descriptor with integer arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_DIRECT);
        }
    }
}

/// A name no other run uses, for a temp file in a directory several
/// plotters may share: `{stem}-{pid}-{random}.{extension}.tmp`.
pub(crate) fn unique_temp_name(stem: &str, extension: &str) -> String {
    let mut random = [0u8; 4];
    // SAFETY: getrandom writes at most the buffer's length into it.
    let got = unsafe { libc::getrandom(random.as_mut_ptr().cast(), random.len(), 0) };
    if got != random.len() as isize {
        // No randomness: the time still tells runs of one pid apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        random = nanos.to_le_bytes();
    }
    format!(
        "{stem}-{}-{}.{extension}.{TEMP_EXTENSION}",
        std::process::id(),
        hex::encode(random)
    )
}

/// Removes temp files that an interrupted run left behind. A temp file is
/// locked from its creation (see [`create_locked`]) until it is renamed or
/// removed, so a file whose lock this process can take belongs to no live
/// process.
pub(crate) fn remove_stale_temps(dir: &Path) {
    let _dir = lock_dir(dir);
    for (path, _, live) in temps_in(dir) {
        if !live {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A temp file of spacevault's in a directory: its path, its size, and
/// whether a live process holds it.
pub type TempEntry = (PathBuf, u64, bool);

/// spacevault's temp files in `dir` (none when it cannot be read).
/// A file is taken to be live when its lock cannot be taken; the lock is
/// taken and released at once otherwise.
pub fn temps_in(dir: &Path) -> Vec<TempEntry> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<TempEntry> = entries
        .flatten()
        .filter(|e| is_our_temp(&e.file_name().to_string_lossy()))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let f = OpenOptions::new().read(true).open(e.path()).ok()?;
            let size = f.metadata().ok()?.len();
            Some((e.path(), size, !try_lock(&f)))
        })
        .collect();
    found.sort();
    found
}

fn try_lock(f: &File) -> bool {
    // SAFETY: flock on a valid descriptor has no memory effects.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Free space in a directory, as a test pretends it to be.
#[cfg(test)]
pub(crate) type FreeSpace = Box<dyn Fn(&Path) -> u64>;

#[cfg(test)]
thread_local! {
    /// Free space as a test on this thread sees it, in place of the file
    /// system's: a nearly full disk without one.
    pub(crate) static FAKE_FREE_SPACE: std::cell::RefCell<Option<FreeSpace>> =
        std::cell::RefCell::new(None);
}

/// Bytes free to this user on the file system of `dir`.
pub fn free_space(dir: &Path) -> io::Result<u64> {
    #[cfg(test)]
    if let Some(free) = FAKE_FREE_SPACE.with(|f| f.borrow().as_ref().map(|free| free(dir))) {
        return Ok(free);
    }
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statvfs writes into the struct we pass and reads the C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

fn device_of(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| m.dev())
}

/// The drive a directory's file system is on: the whole disk behind a
/// partition, or behind a device-mapper or md volume built on one device,
/// as sysfs names it (`nvme0n1`, `sda`); else the file system's device
/// number (tmpfs, network file systems, volumes over several disks). Two
/// partitions of one disk share its bandwidth, so they are one drive.
pub(crate) fn drive_of(dir: &Path) -> Option<String> {
    let dev = device_of(dir)?;
    Some(drive_in(Path::new("/sys"), dev).unwrap_or_else(|| format!("device {dev}")))
}

fn drive_in(sys: &Path, dev: u64) -> Option<String> {
    // glibc's encoding of a device number (gnu_dev_major and gnu_dev_minor).
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let mut path = std::fs::canonicalize(sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    // A volume on exactly one device is that device (a few levels at most:
    // LVM on dm-crypt on a partition).
    for _ in 0..4 {
        let slaves: Vec<_> = match std::fs::read_dir(path.join("slaves")) {
            Ok(entries) => entries.flatten().collect(),
            Err(_) => break,
        };
        match slaves.as_slice() {
            [one] => path = std::fs::canonicalize(one.path()).ok()?,
            _ => break,
        }
    }
    if path.join("partition").exists() {
        path.pop();
    }
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
}

/// Fails before any work when the output (and temp) directories cannot hold
/// what the plot will write.
pub(crate) fn check_space(
    out_dir: &Path,
    out_bytes: u64,
    tmp_dir: &Path,
    tmp_bytes: u64,
) -> Result<(), PlotError> {
    let same = device_of(out_dir).is_some() && device_of(out_dir) == device_of(tmp_dir);
    let mut needs = vec![(out_dir, out_bytes + if same { tmp_bytes } else { 0 })];
    if !same && tmp_bytes > 0 {
        needs.push((tmp_dir, tmp_bytes));
    }
    for (dir, needed) in needs {
        let available = free_space(dir)
            .map_err(|e| PlotError::io(format!("checking free space in {}", dir.display()), e))?;
        if available < needed {
            return Err(PlotError::NoSpace {
                dir: dir.to_path_buf(),
                needed,
                available,
            });
        }
    }
    Ok(())
}

pub(crate) fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf has no memory effects.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (pages > 0 && size > 0).then(|| pages as u64 * size as u64)
}

/// Writes `bufs` one after another from `offset`, many slices a system call.
/// With O_DIRECT every slice must be page-aligned and page-sized.
pub(crate) fn write_all_vectored_at(
    file: &File,
    bufs: &[&[u8]],
    mut offset: u64,
) -> io::Result<()> {
    // Slices a call takes at most (IOV_MAX on Linux).
    const MAX_SLICES: usize = 1024;
    let (mut i, mut done) = (0usize, 0usize);
    while i < bufs.len() {
        if bufs[i].len() == done {
            i += 1;
            done = 0;
            continue;
        }
        let iov: Vec<libc::iovec> = bufs[i..]
            .iter()
            .take(MAX_SLICES)
            .enumerate()
            .map(|(j, b)| {
                let b = if j == 0 { &b[done..] } else { b };
                libc::iovec {
                    iov_base: b.as_ptr() as *mut libc::c_void,
                    iov_len: b.len(),
                }
            })
            .collect();
        // SAFETY: every iovec points into a live slice of its stated length.
        let n = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iov.as_ptr(),
                iov.len() as libc::c_int,
                offset as libc::off_t,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        offset += n as u64;
        let mut n = n as usize;
        while n > 0 {
            let left = bufs[i].len() - done;
            if n >= left {
                n -= left;
                i += 1;
                done = 0;
            } else {
                done += n;
                n = 0;
            }
        }
    }
    Ok(())
}

/// A plot being written. Dropped before [`TempPlot::finish`], it removes
/// its file.
pub(crate) struct TempPlot {
    path: PathBuf,
    file: Option<File>,
}

impl TempPlot {
    pub fn create(path: &Path, reserve: u64) -> Result<TempPlot, PlotError> {
        let file = create_locked(path, true).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists | io::ErrorKind::WouldBlock => {
                PlotError::Busy(path.to_path_buf())
            }
            _ => PlotError::io(format!("creating {}", path.display()), e),
        })?;
        let temp = TempPlot {
            path: path.to_path_buf(),
            file: Some(file),
        };
        let f = temp.file();
        // Reserve the space now, so a full disk shows up before the work.
        // SAFETY: fallocate on a valid descriptor.
        let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, reserve as libc::off_t) };
        if rc == libc::ENOSPC {
            return Err(PlotError::io(
                format!("reserving {reserve} bytes for {}", path.display()),
                io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(temp)
    }

    pub fn file(&self) -> &File {
        self.file.as_ref().expect("file is open until finish")
    }

    /// Writes the header, trims the file to its size, makes it durable and
    /// renames it to `final_path`. Returns the file's size.
    pub fn finish(self, header: &Header, final_path: &Path) -> Result<u64, PlotError> {
        self.finish_with(&header.encode(), header.file_size(), final_path)
    }

    /// [`TempPlot::finish`] for a header already encoded, of either
    /// format: `header` is written at offset 0 and the file is `size`
    /// bytes.
    pub fn finish_with(
        mut self,
        header: &[u8],
        size: u64,
        final_path: &Path,
    ) -> Result<u64, PlotError> {
        let ctx = |what: &str| format!("{what} {}", self.path.display());
        let f = self.file();
        let mut block = AlignedBuf::zeroed(header.len().next_multiple_of(crate::aligned::ALIGN));
        block[..header.len()].copy_from_slice(header);
        f.write_all_at(&block[..header.len()], 0)
            .map_err(|e| PlotError::io(ctx("writing the header of"), e))?;
        f.set_len(size)
            .map_err(|e| PlotError::io(ctx("setting the size of"), e))?;
        f.sync_all().map_err(|e| PlotError::io(ctx("syncing"), e))?;
        std::fs::rename(&self.path, final_path).map_err(|e| PlotError::io(ctx("renaming"), e))?;
        self.file = None;
        self.path = PathBuf::new();
        if let Some(dir) = final_path.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| PlotError::io(format!("syncing directory {}", dir.display()), e))?;
        }
        Ok(size)
    }
}

impl Drop for TempPlot {
    fn drop(&mut self) {
        // Removed before it is closed: once closed, its lock no longer
        // says it is live.
        if self.file.is_some() {
            let _ = std::fs::remove_file(&self.path);
            self.file = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_and_single_device_volumes_are_their_disk() {
        // A sysfs of sda (partitions 1 and 2), nvme0n1 (whole) and dm-0
        // over sda2.
        let sys = tempfile::tempdir().unwrap();
        let root = sys.path();
        for dir in ["sda/sda1", "sda/sda2", "nvme0n1", "dm-0/slaves"] {
            std::fs::create_dir_all(root.join("devices").join(dir)).unwrap();
        }
        std::fs::create_dir_all(root.join("dev/block")).unwrap();
        for part in ["sda/sda1", "sda/sda2"] {
            std::fs::write(root.join("devices").join(part).join("partition"), "1").unwrap();
        }
        let link = |target: &str, at: &str| {
            std::os::unix::fs::symlink(root.join(target), root.join(at)).unwrap()
        };
        link("devices/sda/sda1", "dev/block/8:1");
        link("devices/sda/sda2", "dev/block/8:2");
        link("devices/nvme0n1", "dev/block/259:0");
        link("devices/dm-0", "dev/block/253:0");
        link("devices/sda/sda2", "devices/dm-0/slaves/sda2");
        let dev = |major: u64, minor: u64| (major << 8) | minor;
        let drive = |major, minor| drive_in(root, dev(major, minor));
        assert_eq!(drive(8, 1).as_deref(), Some("sda"));
        assert_eq!(drive(8, 2).as_deref(), Some("sda"));
        assert_eq!(drive(253, 0).as_deref(), Some("sda"));
        assert_eq!(drive(259, 0).as_deref(), Some("nvme0n1"));
        assert_eq!(drive(1, 1), None);
        // Large numbers use the upper bits: major 259, minor 300000.
        let big = (259 << 8) | (300_000 & 0xff) | ((300_000 & !0xff) << 12);
        link("devices/nvme0n1", "dev/block/259:300000");
        assert_eq!(drive_in(root, big).as_deref(), Some("nvme0n1"));
        // This machine's directories are on some drive.
        assert!(drive_of(root).is_some());
    }

    #[test]
    fn a_cleanup_removes_stale_temps_and_never_a_live_one() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("spacevault-k16-aa.plot.tmp");
        std::fs::write(&stale, b"left by a killed run").unwrap();
        let live_path = dir
            .path()
            .join(unique_temp_name("spacevault-k16-bb", "sort"));
        let live = create_locked(&live_path, false).unwrap();
        let other = dir.path().join("notes.tmp");
        std::fs::write(&other, b"not ours").unwrap();
        let found = temps_in(dir.path());
        assert_eq!(
            found,
            vec![(stale.clone(), 20, false), (live_path.clone(), 0, true)]
        );
        remove_stale_temps(dir.path());
        assert!(!stale.exists() && live_path.exists() && other.exists());
        drop(live);
        remove_stale_temps(dir.path());
        assert!(!live_path.exists());
    }

    #[test]
    fn a_temp_file_is_never_removed_between_its_creation_and_its_lock() {
        // Many plotters starting at once: each creates its temp file while
        // the others clean up stale ones. Threads stand for processes here,
        // as every open file has a lock of its own.
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2000 {
            let path = dir.path().join(format!("spacevault-k16-{i}.plot.tmp"));
            let file = std::thread::scope(|s| {
                let cleaner = s.spawn(|| remove_stale_temps(dir.path()));
                let file = create_locked(&path, false).unwrap();
                cleaner.join().unwrap();
                file
            });
            assert!(path.exists(), "iteration {i}: a live temp file was removed");
            drop(file);
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn temp_names_differ_between_runs() {
        let a = unique_temp_name("spacevault-k20-00", "sort");
        let b = unique_temp_name("spacevault-k20-00", "sort");
        assert_ne!(a, b);
        assert!(is_our_temp(&a) && a.ends_with(".sort.tmp"), "{a}");
    }

    #[test]
    fn vectored_writes_land_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v");
        let file = File::create(&path).unwrap();
        let parts: Vec<Vec<u8>> = (0..2500u32)
            .map(|i| vec![i as u8; (i % 7) as usize])
            .collect();
        let slices: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        write_all_vectored_at(&file, &slices, 3).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(&got[..3], &[0, 0, 0]);
        assert_eq!(got[3..], parts.concat());
    }
}

//! Reading a manifest out of a library file without opening it as a library.
//!
//! The file is read, never mapped (a file truncated under a map would crash the host with
//! SIGBUS): `object` parses it through a read cache that reads the headers and the manifest
//! section alone, or from bytes already in memory. Every segment's file range is checked, so a
//! truncated library is rejected here and never reaches `dlopen` (which would crash the host).

use std::{fs::File, path::Path};

use object::{Object, ObjectSection, ObjectSegment, ReadRef, read::elf::FileHeader};
use plugin_manifest::section;

use super::SkipReason;

/// Reads and unframes the manifest JSON of the library at `path`, reading only what it needs.
pub(crate) fn read_manifest(path: &Path) -> Result<String, SkipReason> {
    let file = File::open(path).map_err(|e| SkipReason::Unreadable(e.to_string()))?;
    manifest_from(&object::ReadCache::new(file))
}

/// The manifest JSON in an object file (its bytes, or a read cache over it), after checking the
/// file is a whole library.
pub(crate) fn manifest_from<'d, R: ReadRef<'d>>(data: R) -> Result<String, SkipReason> {
    let has = data
        .len()
        .map_err(|()| SkipReason::Unreadable("its length cannot be read".to_owned()))?;
    let file = object::File::parse(data).map_err(|e| {
        truncation(data, has).unwrap_or_else(|| SkipReason::NotALibrary(e.to_string()))
    })?;
    if file.kind() != object::ObjectKind::Dynamic {
        return Err(SkipReason::NotALibrary(format!(
            "a {:?} object, not a shared library",
            file.kind()
        )));
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        if offset.checked_add(size).is_none_or(|end| end > has) {
            return Err(SkipReason::Truncated {
                needs: offset.saturating_add(size),
                has,
            });
        }
    }
    let section = file
        .section_by_name(section::SECTION)
        .or_else(|| file.section_by_name(section::MACHO_SECTION))
        .ok_or(SkipReason::NoManifest)?;
    let data = section.data().map_err(|e| {
        SkipReason::BadManifest(format!("the manifest section cannot be read: {e}"))
    })?;
    section::decode(data)
        .map(str::to_owned)
        .map_err(|e| SkipReason::BadManifest(e.to_string()))
}

/// Whether `data` (`has` bytes) starts like an object file whose headers describe more bytes
/// than there are: a partial copy, which `object` would only report as a bad header offset.
fn truncation<'d, R: ReadRef<'d>>(data: R, has: u64) -> Option<SkipReason> {
    let needs = match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf32 => {
            elf_extent(object::elf::FileHeader32::<object::Endianness>::parse(data).ok()?)?
        }
        object::FileKind::Elf64 => {
            elf_extent(object::elf::FileHeader64::<object::Endianness>::parse(data).ok()?)?
        }
        _ => return None,
    };
    (needs > has).then_some(SkipReason::Truncated { needs, has })
}

/// The end of an ELF file's program and section header tables.
fn elf_extent<H: FileHeader>(header: &H) -> Option<u64> {
    let endian = header.endian().ok()?;
    let table_end = |offset: u64, count: u16, size: u16| {
        offset.saturating_add(u64::from(count).saturating_mul(u64::from(size)))
    };
    Some(
        table_end(
            header.e_phoff(endian).into(),
            header.e_phnum(endian),
            header.e_phentsize(endian),
        )
        .max(table_end(
            header.e_shoff(endian).into(),
            header.e_shnum(endian),
            header.e_shentsize(endian),
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn half_an_elf_file_is_truncated_not_garbage() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let half = &exe[..exe.len() / 2];
        match manifest_from(half) {
            Err(SkipReason::Truncated { needs, has }) => {
                assert_eq!(has, half.len() as u64);
                assert!(needs > has);
            }
            other => panic!("expected Truncated, got {other:?}"),
        }
    }
}

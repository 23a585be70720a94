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

    /// A minimal PE32+ DLL (x86-64) whose one section, `.rmcpmf`, holds `record`.
    fn pe_dll(record: &[u8]) -> Vec<u8> {
        const DATA_AT: u32 = 512;
        let mut file = vec![0; 64];
        file[..2].copy_from_slice(b"MZ");
        file[0x3c..0x40].copy_from_slice(&64u32.to_le_bytes());
        file.extend_from_slice(b"PE\0\0");
        let optional_size: u16 = 112 + 16 * 8;
        for field in [&0x8664u16.to_le_bytes()[..], &1u16.to_le_bytes(), &[0; 12]] {
            file.extend_from_slice(field);
        }
        file.extend_from_slice(&optional_size.to_le_bytes());
        // IMAGE_FILE_EXECUTABLE_IMAGE | IMAGE_FILE_LARGE_ADDRESS_AWARE | IMAGE_FILE_DLL.
        file.extend_from_slice(&0x2022u16.to_le_bytes());
        let optional = file.len();
        file.resize(optional + usize::from(optional_size), 0);
        file[optional..optional + 2].copy_from_slice(&0x20bu16.to_le_bytes());
        file[optional + 108..optional + 112].copy_from_slice(&16u32.to_le_bytes());
        file.extend_from_slice(b".rmcpmf\0");
        let size = u32::try_from(record.len()).unwrap();
        for field in [size, 0x1000, size, DATA_AT, 0, 0, 0] {
            file.extend_from_slice(&field.to_le_bytes());
        }
        // IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_MEM_READ.
        file.extend_from_slice(&0x4000_0040u32.to_le_bytes());
        file.resize(DATA_AT as usize, 0);
        file.extend_from_slice(record);
        file
    }

    /// A minimal 64-bit Mach-O dylib whose one section, `__DATA,__rmcpmf`, holds `record`.
    fn macho_dylib(record: &[u8]) -> Vec<u8> {
        let name = |text: &str| {
            let mut field = [0; 16];
            field[..text.len()].copy_from_slice(text.as_bytes());
            field
        };
        let data_at = 32 + 72 + 80;
        let size = record.len() as u64;
        let mut file = Vec::new();
        // MH_MAGIC_64, CPU_TYPE_X86_64, CPU_SUBTYPE_X86_64_ALL, MH_DYLIB, 1 command, its size.
        for field in [0xfeed_facfu32, 0x0100_0007, 3, 6, 1, 72 + 80, 0, 0] {
            file.extend_from_slice(&field.to_le_bytes());
        }
        // LC_SEGMENT_64 for __DATA, with one section.
        file.extend_from_slice(&0x19u32.to_le_bytes());
        file.extend_from_slice(&(72u32 + 80).to_le_bytes());
        file.extend_from_slice(&name("__DATA"));
        for field in [0x1000, size, data_at, size] {
            file.extend_from_slice(&field.to_le_bytes());
        }
        for field in [3u32, 3, 1, 0] {
            file.extend_from_slice(&field.to_le_bytes());
        }
        file.extend_from_slice(&name("__rmcpmf"));
        file.extend_from_slice(&name("__DATA"));
        file.extend_from_slice(&0x1000u64.to_le_bytes());
        file.extend_from_slice(&size.to_le_bytes());
        file.extend_from_slice(&u32::try_from(data_at).unwrap().to_le_bytes());
        file.extend_from_slice(&[0; 28]);
        file.extend_from_slice(record);
        file
    }

    #[test]
    fn the_manifest_is_read_from_a_windows_dll_and_a_macos_dylib() {
        let json = r#"{"name":"x"}"#;
        let mut record = section::encode(json);
        record.extend([0; 3]);
        assert_eq!(manifest_from(&pe_dll(&record)[..]).as_deref(), Ok(json));
        assert_eq!(
            manifest_from(&macho_dylib(&record)[..]).as_deref(),
            Ok(json)
        );
        let mut exe = pe_dll(&record);
        exe[64 + 4 + 18..64 + 4 + 20].copy_from_slice(&0x0022u16.to_le_bytes());
        assert!(
            matches!(manifest_from(&exe[..]), Err(SkipReason::NotALibrary(_))),
            "a PE executable is not a plugin"
        );
        let dylib = macho_dylib(&record);
        assert!(matches!(
            manifest_from(&dylib[..dylib.len() - 1]),
            Err(SkipReason::Truncated { .. })
        ));
    }

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

//! Reading a manifest out of a library file without opening it as a library.
//!
//! The file is read, never mapped (a file truncated under a map would crash the host with
//! SIGBUS): `object` parses it through a read cache that reads the headers and the manifest
//! section alone, or from bytes already in memory. Every segment's file range is checked, so a
//! truncated library is rejected here and never reaches `dlopen` (which would crash the host).
//!
//! An ELF library is read through its headers alone (the file header, the program headers, the
//! section headers and their names): `object`'s whole-file parse also reads the symbol tables,
//! hundreds of kilobytes in an ordinary plugin, which made most of the time of a start with a
//! thousand plugins. Other formats go through the whole-file parse.

use std::{fs::File, path::Path};

use object::{
    Endianness, FileKind, Object, ObjectKind, ObjectSection, ObjectSegment, ReadRef,
    read::elf::{FileHeader, ProgramHeader, SectionHeader},
};
use plugin_manifest::section;

use super::SkipReason;

/// Reads and unframes the manifest JSON of the library at `path`, reading only what it needs.
pub(crate) fn read_manifest(path: &Path) -> Result<String, SkipReason> {
    let unreadable = |e: std::io::Error| SkipReason::Unreadable(e.to_string());
    let file = File::open(path).map_err(unreadable)?;
    #[cfg(unix)]
    let file = Positioned::new(file).map_err(unreadable)?;
    manifest_from(&object::ReadCache::new(file))
}

/// How much of a file's start is read at once: an ELF file's header and program headers.
#[cfg(unix)]
const HEAD: usize = 4096;

/// A file read with positioned reads (`pread`), its first [`HEAD`] bytes read once: `object`'s
/// read cache seeks before each read, which over `Read + Seek` is a system call of its own, and
/// reads the headers at the file's start in several small reads.
#[cfg(unix)]
struct Positioned {
    file: File,
    head: Vec<u8>,
    len: u64,
    at: u64,
}

#[cfg(unix)]
impl Positioned {
    fn new(file: File) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        let mut head = vec![0; HEAD.min(usize::try_from(len).unwrap_or(HEAD))];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut head, 0)?;
        Ok(Self {
            file,
            head,
            len,
            at: 0,
        })
    }

    /// Copies into `buf` what the head holds of it at the current position, if it holds it all.
    fn copy_head(&mut self, buf: &mut [u8]) -> bool {
        let Some(held) = usize::try_from(self.at)
            .ok()
            .and_then(|at| self.head.get(at..at.checked_add(buf.len())?))
        else {
            return false;
        };
        buf.copy_from_slice(held);
        self.at += buf.len() as u64;
        true
    }
}

#[cfg(unix)]
impl object::ReadCacheOps for Positioned {
    fn len(&mut self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn seek(&mut self, pos: u64) -> Result<u64, ()> {
        self.at = pos;
        Ok(pos)
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ()> {
        if self.copy_head(buf) {
            return Ok(buf.len());
        }
        let read = std::os::unix::fs::FileExt::read_at(&self.file, buf, self.at).map_err(|_| ())?;
        self.at += read as u64;
        Ok(read)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), ()> {
        if self.copy_head(buf) {
            return Ok(());
        }
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, self.at).map_err(|_| ())?;
        self.at += buf.len() as u64;
        Ok(())
    }
}

/// The manifest JSON in an object file (its bytes, or a read cache over it), after checking the
/// file is a whole library.
pub(crate) fn manifest_from<'d, R: ReadRef<'d>>(data: R) -> Result<String, SkipReason> {
    let has = data
        .len()
        .map_err(|()| SkipReason::Unreadable("its length cannot be read".to_owned()))?;
    let broken = |e: object::Error| {
        truncation(data, has).unwrap_or_else(|| SkipReason::NotALibrary(e.to_string()))
    };
    match FileKind::parse(data) {
        Ok(FileKind::Elf64) => {
            return elf_manifest(
                object::elf::FileHeader64::<Endianness>::parse(data),
                data,
                has,
            );
        }
        Ok(FileKind::Elf32) => {
            return elf_manifest(
                object::elf::FileHeader32::<Endianness>::parse(data),
                data,
                has,
            );
        }
        _ => {}
    }
    let file = object::File::parse(data).map_err(broken)?;
    library_kind(file.kind())?;
    for segment in file.segments() {
        whole(segment.file_range(), has)?;
    }
    let section = file
        .section_by_name(section::SECTION)
        .or_else(|| file.section_by_name(section::MACHO_SECTION))
        .ok_or(SkipReason::NoManifest)?;
    decoded(section.data())
}

/// The manifest JSON of an ELF file whose header is `header`, read through its headers alone.
fn elf_manifest<'d, H, R>(
    header: object::Result<&'d H>,
    data: R,
    has: u64,
) -> Result<String, SkipReason>
where
    H: FileHeader<Endian = Endianness>,
    R: ReadRef<'d>,
{
    let broken = |e: object::Error| {
        truncation(data, has).unwrap_or_else(|| SkipReason::NotALibrary(e.to_string()))
    };
    let header = header.map_err(broken)?;
    let endian = header.endian().map_err(broken)?;
    library_kind(match header.e_type(endian) {
        object::elf::ET_REL => ObjectKind::Relocatable,
        object::elf::ET_EXEC => ObjectKind::Executable,
        object::elf::ET_DYN => ObjectKind::Dynamic,
        object::elf::ET_CORE => ObjectKind::Core,
        _ => ObjectKind::Unknown,
    })?;
    for segment in header.program_headers(endian, data).map_err(broken)? {
        if segment.p_type(endian) == object::elf::PT_LOAD {
            whole(
                (
                    segment.p_offset(endian).into(),
                    segment.p_filesz(endian).into(),
                ),
                has,
            )?;
        }
    }
    // The section names are read as one table, not name by name.
    let sections = header.section_headers(endian, data).map_err(broken)?;
    let names = sections
        .get(header.shstrndx(endian, data).map_err(broken)? as usize)
        .map(|names| names.data(endian, data))
        .transpose()
        .map_err(|e| SkipReason::NotALibrary(format!("its section names cannot be read: {e}")))?
        .unwrap_or_default();
    let named = |header: &&H::SectionHeader| {
        let at = header.sh_name(endian) as usize;
        names
            .get(at..)
            .and_then(|rest| rest.split(|b| *b == 0).next())
            == Some(section::SECTION.as_bytes())
    };
    let section = sections.iter().find(named).ok_or(SkipReason::NoManifest)?;
    decoded(section.data(endian, data))
}

/// Refuses an object file that is not a shared library.
fn library_kind(kind: ObjectKind) -> Result<(), SkipReason> {
    if kind == ObjectKind::Dynamic {
        return Ok(());
    }
    Err(SkipReason::NotALibrary(format!(
        "a {kind:?} object, not a shared library"
    )))
}

/// Refuses a segment (its file offset and size) that ends past the file's `has` bytes.
fn whole((offset, size): (u64, u64), has: u64) -> Result<(), SkipReason> {
    if offset.checked_add(size).is_none_or(|end| end > has) {
        return Err(SkipReason::Truncated {
            needs: offset.saturating_add(size),
            has,
        });
    }
    Ok(())
}

/// The manifest JSON in the manifest section's bytes, as read.
fn decoded<E: std::fmt::Display>(data: Result<&[u8], E>) -> Result<String, SkipReason> {
    let data = data.map_err(|e| {
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

//! Lists and gets: a result behind a handle, its items borrowed until
//! it is freed.

use std::sync::Arc;

use herald::read::{Continue, ListRequest, ListResponse, ReadAt};

use crate::args::*;
use crate::data::*;
use crate::engine::engine;
use crate::handles::{Kind, Registry};
use crate::status::*;

pub(crate) static LISTS: Registry<ListResult> = Registry::new(Kind::List);

/// A list behind its handle, its continue token as text (for the view).
#[derive(Debug)]
pub(crate) struct ListResult {
    response: ListResponse,
    token: Option<String>,
}

impl ListResult {
    fn new(response: ListResponse) -> ListResult {
        let token = response.continue_token.as_ref().map(ToString::to_string);
        ListResult { response, token }
    }
}

/// Lists from the cache: one page, as Kubernetes' LIST with the request's
/// version rules (unset: the cache's latest; `0`: any; with
/// [`HERALD_MATCH_EXACT`]: that version, from history). The result is a
/// list handle: read it with [`herald_list_len`], [`herald_list_item`],
/// [`herald_list_info`]; free it with [`herald_list_free`].
///
/// # Safety
/// `request` is null or points to a readable [`HeraldListRequest`] whose
/// strings are valid as [`HeraldStr`] requires; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_list(
    engine_h: HeraldEngine,
    request: *const HeraldListRequest,
    out: *mut HeraldList,
) -> HeraldStatus {
    guard(|| {
        let e = engine(engine_h)?;
        // SAFETY: `request` is null or a HeraldListRequest with valid
        // strings (the docs).
        let r = unsafe { arg(request, "request")? };
        if out.is_null() {
            return Err(Error::null("out"));
        }
        // SAFETY: as above.
        let (labels, fields) = unsafe { selectors(r.label_selector, r.field_selector) }?;
        // SAFETY: as above.
        let token = unsafe { text(r.continue_token, "continue_token") }?;
        let (rv, rvm) = version(r.resource_version, r.flags)?;
        let at =
            ReadAt::for_list(rv, rvm, r.limit > 0, !token.is_empty()).map_err(Error::invalid)?;
        // SAFETY: as above.
        let mut req = ListRequest::new()
            .scope(unsafe { scope(r.scope, r.scope_value) }?)
            .labels(labels)
            .fields(fields)
            .at(at)
            .limit(r.limit);
        if !token.is_empty() {
            let token: Continue = token
                .parse()
                .map_err(|e| Error::invalid(format!("continue token: {e}")))?;
            req = req.continue_from(token);
        }
        let h = LISTS.insert(ListResult::new(e.list(&req)?));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(HERALD_OK)
    })
}

/// Gets one object by key, as a list of 0 or 1 items (read it as a list).
/// Version rules as [`herald_engine_list`]'s without paging.
///
/// # Safety
/// `key` is valid as [`HeraldStr`] requires (its bytes readable for the
/// call); `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_engine_get(
    engine_h: HeraldEngine,
    key: HeraldStr,
    resource_version: u64,
    flags: u32,
    out: *mut HeraldList,
) -> HeraldStatus {
    guard(|| {
        let e = engine(engine_h)?;
        // SAFETY: `key` is a valid HeraldStr (the docs).
        let key = unsafe { text(key, "key") }?;
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let (rv, rvm) = version(resource_version, flags)?;
        let at = ReadAt::for_get(rv, rvm).map_err(Error::invalid)?;
        let got = e.get(key, at)?;
        let list = ListResponse {
            items: got.item.into_iter().collect(),
            resource_version: got.resource_version,
            continue_token: None,
            remaining_item_count: None,
            shard: None,
        };
        let h = LISTS.insert(ListResult::new(list));
        // SAFETY: checked non-null.
        unsafe { out.write(h) };
        Ok(HERALD_OK)
    })
}

pub(crate) fn list(h: HeraldList) -> Result<Arc<ListResult>, Error> {
    LISTS.get(h).map_err(|w| stale("list", h, w))
}

/// How many items the list holds.
///
/// # Safety
/// `out` is null or points to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_list_len(list_h: HeraldList, out: *mut usize) -> HeraldStatus {
    guard(|| {
        let n = list(list_h)?.response.items.len();
        // SAFETY: `out` is null or writable (the docs).
        unsafe { put(out, n, "out") }?;
        Ok(HERALD_OK)
    })
}

/// Item `index` (in key order); its bytes live until the list is freed.
///
/// # Safety
/// `out` is null or points to a writable [`HeraldItem`]; the views written
/// stay valid until the list is freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_list_item(
    list_h: HeraldList,
    index: usize,
    out: *mut HeraldItem,
) -> HeraldStatus {
    guard(|| {
        let l = list(list_h)?;
        let items = &l.response.items;
        let item = items
            .get(index)
            .ok_or_else(|| Error::invalid(format!("item {index} of a list of {}", items.len())))?;
        // The bytes are the list's, which the registry keeps until freed.
        let view = HeraldItem {
            key: bytes(item.object.key().as_bytes()),
            payload: bytes(item.object.payload()),
            resource_version: item.resource_version.get(),
        };
        // SAFETY: `out` is null or writable (the docs).
        unsafe { put(out, view, "out") }?;
        Ok(HERALD_OK)
    })
}

/// The version the list was read at, and its continue token (empty on
/// the last page; the bytes live until the list is freed). Either
/// out-parameter may be null.
///
/// # Safety
/// `resource_version_out` and `continue_out` are null or writable; the
/// token's view stays valid until the list is freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn herald_list_info(
    list_h: HeraldList,
    resource_version_out: *mut u64,
    continue_out: *mut HeraldBytes,
) -> HeraldStatus {
    guard(|| {
        let l = list(list_h)?;
        let token = bytes(l.token.as_deref().unwrap_or("").as_bytes());
        // SAFETY: each out-parameter is null or writable (the docs); the
        // token's bytes are the list's, kept until it is freed.
        unsafe {
            if let Some(rv) = resource_version_out.as_mut() {
                *rv = l.response.resource_version.get();
            }
            if let Some(c) = continue_out.as_mut() {
                *c = token;
            }
        }
        Ok(HERALD_OK)
    })
}

/// Frees a list (its views end).
#[unsafe(no_mangle)]
pub extern "C" fn herald_list_free(list_h: HeraldList) -> HeraldStatus {
    guard(|| {
        LISTS.remove(list_h).map_err(|w| stale("list", list_h, w))?;
        Ok(HERALD_OK)
    })
}

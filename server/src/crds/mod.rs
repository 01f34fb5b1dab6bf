//! Custom resources, from the CustomResourceDefinitions stored in etcd
//! (or served by the apiserver): what each CRD defines ([`Custom`]:
//! every served version, one stored resource), and how its objects
//! convert between versions on the way out ([`Converter`]: `None` and
//! `Webhook`, as the apiserver's `apiextensions-apiserver` converts).

mod client;
mod convert;
mod custom;
mod deprecation;
mod nop;
mod review;
mod spec;

pub use client::ServiceIps;
pub use convert::Converter;
pub use custom::{Custom, custom_of, customs};
pub use spec::{ConversionSpec, WebhookSpec, WebhookTarget};

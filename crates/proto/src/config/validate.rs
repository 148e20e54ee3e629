//! What a configuration must satisfy before an endpoint runs with it: [`ConfigError`],
//! [`AssociationConfig::validate`] and [`EndpointConfig::validate`].

use std::ops::RangeInclusive;
use std::time::Duration;

use super::{AssociationConfig, EndpointConfig};

/// Path MTUs a configuration may assume, in bytes of IP packet: at least the 1200 bytes
/// every IPv6 path carries with room for a tunnel (as QUIC assumes, RFC 9000 §14), at most
/// the largest IP packet (IPv4 Total Length and IPv6 Payload Length are 16 bits; a DATA
/// chunk's Length field is too, RFC 9260 §3.2).
pub const PATH_MTU_RANGE: RangeInclusive<usize> = 1200..=65535;

/// Longest delayed-SACK timeout: "MUST NOT be more than 500 ms" (RFC 9260 §6.2).
pub const MAX_SACK_DELAY: Duration = Duration::from_millis(500);

/// Why a configuration was refused. Each message names the setting as it is spelled in
/// [`AssociationConfig`] or [`EndpointConfig`] (and in the simulator's scenario files).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting that must be positive is zero.
    #[error("{key} must not be 0")]
    Zero {
        /// The setting.
        key: &'static str,
    },
    /// RTO.Min ≤ RTO.Initial ≤ RTO.Max does not hold (RFC 9260 §6.3.1).
    #[error("rto_min ({min:?}) <= rto_initial ({initial:?}) <= rto_max ({max:?}) does not hold")]
    RtoOrder {
        /// RTO.Min.
        min: Duration,
        /// RTO.Initial.
        initial: Duration,
        /// RTO.Max.
        max: Duration,
    },
    /// RTO.Alpha or RTO.Beta is not strictly between 0 and 1 (RFC 9260 §6.3.1).
    #[error("{key} must be strictly between 0 and 1, not {value}")]
    RtoGain {
        /// `rto_alpha` or `rto_beta`.
        key: &'static str,
        /// The value given.
        value: f64,
    },
    /// The delayed-SACK timeout is longer than [`MAX_SACK_DELAY`].
    #[error("sack_delay {0:?} exceeds 500ms (RFC 9260 §6.2)")]
    SackDelay(Duration),
    /// `max_message_size` does not fit a buffer.
    #[error("max_message_size ({size}) exceeds {buffer} ({limit})")]
    MessageTooLarge {
        /// `max_message_size`.
        size: usize,
        /// The buffer it does not fit: `send_buffer` or `recv_buffer`.
        buffer: &'static str,
        /// That buffer's size.
        limit: usize,
    },
    /// A buffer's autotuning maximum is below its initial size.
    #[error("{key} ({max}) is below {base_key} ({base})")]
    BufferMax {
        /// `send_buffer_max` or `recv_buffer_max`.
        key: &'static str,
        /// Its value.
        max: usize,
        /// `send_buffer` or `recv_buffer`.
        base_key: &'static str,
        /// Its value.
        base: usize,
    },
    /// `path_loss_threshold` is not a rate in (0, 1].
    #[error("path_loss_threshold must be in (0, 1], not {0}")]
    LossThreshold(f64),
    /// `path_mtu` is outside [`PATH_MTU_RANGE`].
    #[error("path_mtu {0} is outside 1200..=65535")]
    PathMtu(usize),
    /// A source prefix length is longer than its address (32 or 128 bits).
    #[error("{key} {value} is longer than the address ({bits} bits)")]
    PrefixLength {
        /// `source_prefix_v4` or `source_prefix_v6`.
        key: &'static str,
        /// Its value.
        value: u8,
        /// The address's length in bits.
        bits: u8,
    },
}

/// `Err(Zero { key })` if `zero`.
fn nonzero(zero: bool, key: &'static str) -> Result<(), ConfigError> {
    if zero {
        Err(ConfigError::Zero { key })
    } else {
        Ok(())
    }
}

impl AssociationConfig {
    /// Checks the settings against each other and the RFCs' bounds; the first violation is
    /// returned.
    ///
    /// # Errors
    ///
    /// * [`ConfigError::Zero`]: `rto_min`, `max_burst`, `sack_freq`, `outbound_streams`,
    ///   `max_inbound_streams`, `max_message_size`, `pmtu_max_probes` or
    ///   `pmtu_raise_interval` is 0.
    /// * [`ConfigError::RtoOrder`]: not `rto_min <= rto_initial <= rto_max`.
    /// * [`ConfigError::RtoGain`]: `rto_alpha` or `rto_beta` not in (0, 1).
    /// * [`ConfigError::SackDelay`]: `sack_delay` over 500 ms.
    /// * [`ConfigError::MessageTooLarge`]: `max_message_size` over `send_buffer` or
    ///   `recv_buffer`.
    /// * [`ConfigError::PathMtu`]: `path_mtu` outside [`PATH_MTU_RANGE`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        // RFC 9260 §6.3.1: an RTO of 0 would retransmit at once, every time.
        nonzero(self.rto_min.is_zero(), "rto_min")?;
        if !(self.rto_min <= self.rto_initial && self.rto_initial <= self.rto_max) {
            return Err(ConfigError::RtoOrder {
                min: self.rto_min,
                initial: self.rto_initial,
                max: self.rto_max,
            });
        }
        // RFC 9260 §6.3.1: SRTT and RTTVAR are smoothed with gains in (0, 1).
        for (key, value) in [("rto_alpha", self.rto_alpha), ("rto_beta", self.rto_beta)] {
            if !(value > 0.0 && value < 1.0) {
                return Err(ConfigError::RtoGain { key, value });
            }
        }
        // RFC 9260 §6.1: a Max.Burst of 0 would never let a packet out.
        nonzero(self.max_burst == 0, "max_burst")?;
        if self.sack_delay > MAX_SACK_DELAY {
            return Err(ConfigError::SackDelay(self.sack_delay));
        }
        nonzero(self.sack_freq == 0, "sack_freq")?;
        // RFC 9260 §7.2.4: a threshold of 0 would call every chunk lost at once.
        nonzero(self.dupthresh == 0, "dupthresh")?;
        // RFC 9260 §3.3.2: 0 outbound or inbound streams MUST NOT be used.
        nonzero(self.outbound_streams == 0, "outbound_streams")?;
        nonzero(self.max_inbound_streams == 0, "max_inbound_streams")?;
        nonzero(self.max_message_size == 0, "max_message_size")?;
        // A message must fit the send buffer to be accepted, and a peer configured alike
        // must hold it whole to deliver it (there is no partial delivery).
        for (buffer, limit) in [
            ("send_buffer", self.send_buffer),
            ("recv_buffer", self.recv_buffer),
        ] {
            if self.max_message_size > limit {
                return Err(ConfigError::MessageTooLarge {
                    size: self.max_message_size,
                    buffer,
                    limit,
                });
            }
        }
        for (key, max, base_key, base) in [
            (
                "send_buffer_max",
                self.send_buffer_max,
                "send_buffer",
                self.send_buffer,
            ),
            (
                "recv_buffer_max",
                self.recv_buffer_max,
                "recv_buffer",
                self.recv_buffer,
            ),
        ] {
            if max < base {
                return Err(ConfigError::BufferMax {
                    key,
                    max,
                    base_key,
                    base,
                });
            }
        }
        if !PATH_MTU_RANGE.contains(&self.path_mtu) {
            return Err(ConfigError::PathMtu(self.path_mtu));
        }
        nonzero(self.max_data_paths == Some(0), "max_data_paths")?;
        // RFC 8899 §5.1.2: a size is given up after MAX_PROBES losses, so at least one probe.
        nonzero(self.pmtu_max_probes == 0, "pmtu_max_probes")?;
        // RFC 8899 §5.1.1: a zero raise timer would probe without pause.
        nonzero(self.pmtu_raise_interval.is_zero(), "pmtu_raise_interval")?;
        if let Some(t) = self.path_loss_threshold
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(ConfigError::LossThreshold(t));
        }
        Ok(())
    }
}

impl EndpointConfig {
    /// Checks the endpoint's settings, then its associations' ([`AssociationConfig::validate`]).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Zero`] if `port`, `valid_cookie_life`, `cookie_secret_rotation`,
    /// `max_associations`, `max_associations_per_source`, `max_associations_per_prefix` or
    /// `init_answer_rate` or `init_answer_bytes` is 0; [`ConfigError::PrefixLength`] for a source prefix longer
    /// than its address; else the association settings' error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        // RFC 9260 §3.1: port 0 MUST NOT be used.
        nonzero(self.port == 0, "port")?;
        nonzero(self.valid_cookie_life.is_zero(), "valid_cookie_life")?;
        nonzero(
            self.cookie_secret_rotation.is_zero(),
            "cookie_secret_rotation",
        )?;
        nonzero(self.max_associations == 0, "max_associations")?;
        nonzero(
            self.max_associations_per_source == 0,
            "max_associations_per_source",
        )?;
        nonzero(
            self.max_associations_per_prefix == 0,
            "max_associations_per_prefix",
        )?;
        // No INIT-ACK at all would make a listening endpoint unreachable.
        nonzero(self.init_answer_rate == 0, "init_answer_rate")?;
        nonzero(self.init_answer_bytes == 0, "init_answer_bytes")?;
        for (key, value, bits) in [
            ("source_prefix_v4", self.source_prefix_v4, 32),
            ("source_prefix_v6", self.source_prefix_v6, 128),
        ] {
            if value > bits {
                return Err(ConfigError::PrefixLength { key, value, bits });
            }
        }
        self.association.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assoc(f: impl FnOnce(&mut AssociationConfig)) -> Result<(), ConfigError> {
        let mut c = AssociationConfig::default();
        f(&mut c);
        c.validate()
    }

    fn endpoint(f: impl FnOnce(&mut EndpointConfig)) -> Result<(), ConfigError> {
        let mut c = EndpointConfig::default();
        f(&mut c);
        c.validate()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(AssociationConfig::default().validate(), Ok(()));
        assert_eq!(EndpointConfig::default().validate(), Ok(()));
    }

    #[test]
    fn rto_min_must_be_positive() {
        let e = assoc(|c| {
            c.rto_min = Duration::ZERO;
            c.rto_initial = Duration::ZERO;
        });
        assert_eq!(e, Err(ConfigError::Zero { key: "rto_min" }));
    }

    #[test]
    fn rtos_must_be_ordered() {
        let order = |min, initial, max| {
            assoc(|c| {
                (c.rto_min, c.rto_initial, c.rto_max) = (ms(min), ms(initial), ms(max));
            })
        };
        assert_eq!(order(100, 100, 100), Ok(()));
        assert_eq!(order(100, 200, 300), Ok(()));
        let e = order(300, 200, 1000);
        assert_eq!(
            e,
            Err(ConfigError::RtoOrder {
                min: ms(300),
                initial: ms(200),
                max: ms(1000)
            })
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "rto_min (300ms) <= rto_initial (200ms) <= rto_max (1s) does not hold"
        );
        assert!(matches!(
            order(100, 2000, 1000),
            Err(ConfigError::RtoOrder { .. })
        ));
    }

    #[test]
    fn rto_gains_are_strictly_between_0_and_1() {
        for bad in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
            assert!(matches!(
                assoc(|c| c.rto_alpha = bad),
                Err(ConfigError::RtoGain {
                    key: "rto_alpha",
                    ..
                })
            ));
            assert!(matches!(
                assoc(|c| c.rto_beta = bad),
                Err(ConfigError::RtoGain {
                    key: "rto_beta",
                    ..
                })
            ));
        }
        assert_eq!(
            assoc(|c| {
                c.rto_alpha = 0.5;
                c.rto_beta = 0.99;
            }),
            Ok(())
        );
    }

    #[test]
    fn an_autotuning_bound_below_its_buffer_is_refused() {
        let e = assoc(|c| c.recv_buffer_max = c.recv_buffer - 1);
        assert_eq!(
            e.unwrap_err().to_string(),
            "recv_buffer_max (1048575) is below recv_buffer (1048576)"
        );
        // Equal: autotuning off.
        assert_eq!(assoc(|c| c.send_buffer_max = c.send_buffer), Ok(()));
    }

    #[test]
    fn sack_delay_is_at_most_500_ms() {
        assert_eq!(assoc(|c| c.sack_delay = ms(500)), Ok(()));
        assert_eq!(assoc(|c| c.sack_delay = Duration::ZERO), Ok(()));
        let e = assoc(|c| c.sack_delay = ms(501));
        assert_eq!(e, Err(ConfigError::SackDelay(ms(501))));
        assert_eq!(
            e.unwrap_err().to_string(),
            "sack_delay 501ms exceeds 500ms (RFC 9260 §6.2)"
        );
    }

    #[test]
    fn counts_that_must_not_be_zero() {
        let zero = |key| Err(ConfigError::Zero { key });
        assert_eq!(assoc(|c| c.max_burst = 0), zero("max_burst"));
        assert_eq!(assoc(|c| c.sack_freq = 0), zero("sack_freq"));
        assert_eq!(assoc(|c| c.outbound_streams = 0), zero("outbound_streams"));
        assert_eq!(
            assoc(|c| c.max_inbound_streams = 0),
            zero("max_inbound_streams")
        );
        assert_eq!(assoc(|c| c.max_message_size = 0), zero("max_message_size"));
        assert_eq!(assoc(|c| c.pmtu_max_probes = 0), zero("pmtu_max_probes"));
        assert_eq!(
            assoc(|c| c.pmtu_raise_interval = std::time::Duration::ZERO),
            zero("pmtu_raise_interval")
        );
        assert_eq!(
            assoc(|c| c.outbound_streams = 0).unwrap_err().to_string(),
            "outbound_streams must not be 0"
        );
    }

    #[test]
    fn a_message_fits_both_buffers() {
        let fit = |size, send, recv| {
            assoc(|c| {
                (c.max_message_size, c.send_buffer, c.recv_buffer) = (size, send, recv);
            })
        };
        assert_eq!(fit(1000, 1000, 1000), Ok(()));
        assert_eq!(
            fit(1001, 1000, 4000),
            Err(ConfigError::MessageTooLarge {
                size: 1001,
                buffer: "send_buffer",
                limit: 1000
            })
        );
        let e = fit(2000, 4000, 1999);
        assert_eq!(
            e.clone().unwrap_err().to_string(),
            "max_message_size (2000) exceeds recv_buffer (1999)"
        );
        assert!(matches!(
            e,
            Err(ConfigError::MessageTooLarge {
                buffer: "recv_buffer",
                ..
            })
        ));
    }

    #[test]
    fn path_mtu_is_within_1200_and_65535() {
        for ok in [1200, 1500, 9000, 65535] {
            assert_eq!(assoc(|c| c.path_mtu = ok), Ok(()), "{ok}");
        }
        for bad in [0, 576, 1199, 65536, 70000] {
            assert_eq!(
                assoc(|c| c.path_mtu = bad),
                Err(ConfigError::PathMtu(bad)),
                "{bad}"
            );
        }
        assert_eq!(
            ConfigError::PathMtu(70000).to_string(),
            "path_mtu 70000 is outside 1200..=65535"
        );
    }

    #[test]
    fn endpoint_settings_then_the_association_s() {
        let zero = |key| Err(ConfigError::Zero { key });
        assert_eq!(endpoint(|c| c.port = 0), zero("port"));
        assert_eq!(
            endpoint(|c| c.valid_cookie_life = Duration::ZERO),
            zero("valid_cookie_life")
        );
        assert_eq!(
            endpoint(|c| c.cookie_secret_rotation = Duration::ZERO),
            zero("cookie_secret_rotation")
        );
        assert_eq!(
            endpoint(|c| c.max_associations = 0),
            zero("max_associations")
        );
        assert_eq!(
            endpoint(|c| c.max_associations_per_source = 0),
            zero("max_associations_per_source")
        );
        assert_eq!(
            endpoint(|c| c.max_associations_per_prefix = 0),
            zero("max_associations_per_prefix")
        );
        assert_eq!(
            endpoint(|c| c.init_answer_rate = 0),
            zero("init_answer_rate")
        );
        assert_eq!(
            endpoint(|c| c.source_prefix_v6 = 129),
            Err(ConfigError::PrefixLength {
                key: "source_prefix_v6",
                value: 129,
                bits: 128
            })
        );
        assert_eq!(endpoint(|c| c.source_prefix_v4 = 32), Ok(()));
        assert_eq!(
            endpoint(|c| c.association.path_mtu = 65536),
            Err(ConfigError::PathMtu(65536))
        );
    }

    #[test]
    fn try_new_refuses_what_validate_refuses() {
        let mut c = EndpointConfig::default();
        assert!(crate::Endpoint::try_new(c.clone(), 1).is_ok());
        c.association.path_mtu = 70000;
        assert_eq!(
            crate::Endpoint::try_new(c, 1).err(),
            Some(ConfigError::PathMtu(70000))
        );
    }
}

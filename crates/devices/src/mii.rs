//! A clause-22 Ethernet PHY behind a MAC's MDIO interface: the registers
//! Linux's generic PHY driver (`genphy`) reads to find the link. It reports
//! a 10/100 PHY whose auto-negotiation with the far end has completed at
//! 100 Mbit/s full duplex, link always up (the far end is the simulated
//! peer, which never unplugs). Writes to the control and advertisement
//! registers are kept; a reset (BMCR bit 15) clears itself at once.

/// MII register numbers (IEEE 802.3 clause 22).
pub const BMCR: u8 = 0;
pub const BMSR: u8 = 1;
pub const PHYSID1: u8 = 2;
pub const PHYSID2: u8 = 3;
pub const ADVERTISE: u8 = 4;
pub const LPA: u8 = 5;
pub const EXPANSION: u8 = 6;

pub const BMCR_RESET: u16 = 1 << 15;
pub const BMCR_ANENABLE: u16 = 1 << 12;
pub const BMCR_SPEED100: u16 = 1 << 13;
pub const BMCR_FULLDPLX: u16 = 1 << 8;
/// 100 full/half, 10 full/half, auto-negotiation complete and able, link
/// up, extended register set.
pub const BMSR_VALUE: u16 = 0x7800 | 0x0020 | 0x0008 | 0x0004 | 0x0001;
/// 100 full/half and 10 full/half, IEEE 802.3 selector.
pub const ADVERTISE_DEFAULT: u16 = 0x01e1;
/// The link partner advertises the same and acknowledges.
pub const LPA_VALUE: u16 = 0x4000 | 0x01e1;

/// One PHY at one MDIO address.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Phy {
    pub address: u8,
    bmcr: u16,
    advertise: u16,
}

impl Phy {
    pub fn new(address: u8) -> Self {
        Phy {
            address,
            bmcr: BMCR_ANENABLE | BMCR_SPEED100 | BMCR_FULLDPLX,
            advertise: ADVERTISE_DEFAULT,
        }
    }

    /// Value an MDIO read of (`phy`, `reg`) returns: all ones where no PHY
    /// answers, as the pulled-up MDIO line reads.
    pub fn read(&self, phy: u8, reg: u8) -> u16 {
        if phy != self.address {
            return 0xffff;
        }
        match reg {
            BMCR => self.bmcr,
            BMSR => BMSR_VALUE,
            // An identifier no specific Linux PHY driver claims, so the
            // generic driver binds.
            PHYSID1 | PHYSID2 => 0,
            ADVERTISE => self.advertise,
            LPA => LPA_VALUE,
            // Link partner auto-negotiation able.
            EXPANSION => 0x0001,
            _ => 0,
        }
    }

    pub fn write(&mut self, phy: u8, reg: u8, val: u16) {
        if phy != self.address {
            return;
        }
        match reg {
            BMCR if val & BMCR_RESET != 0 => *self = Phy::new(self.address),
            BMCR => self.bmcr = val,
            ADVERTISE => self.advertise = val,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_only_at_its_address_and_resets_itself() {
        let mut p = Phy::new(1);
        assert_eq!(p.read(0, BMSR), 0xffff);
        assert_eq!(p.read(1, BMSR) & 0x0024, 0x0024, "link up, negotiated");
        p.write(1, ADVERTISE, 0x0061);
        p.write(1, BMCR, 0);
        assert_eq!(p.read(1, ADVERTISE), 0x0061);
        assert_eq!(p.read(1, BMCR), 0);
        p.write(1, BMCR, BMCR_RESET);
        assert_eq!(p.read(1, BMCR) & BMCR_RESET, 0, "reset clears itself");
        assert_eq!(p.read(1, ADVERTISE), ADVERTISE_DEFAULT);
    }
}

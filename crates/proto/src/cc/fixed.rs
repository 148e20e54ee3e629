//! A controller whose window never moves, used only by tests: it shows what adding a
//! controller takes (this file, one `AnyController` variant, one dispatch arm) and lets a
//! test hold a path's window where it wants it.

use super::window::Window;
use super::{Controller, Ctx};

/// A fixed window of `cwnd` bytes; losses and timeouts leave it as it is.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    w: Window,
}

impl Fixed {
    /// A window of `cwnd` bytes on a path of `mtu`.
    pub(crate) fn new(mtu: usize, cwnd: usize) -> Self {
        let mut w = Window::new(mtu, usize::MAX);
        w.cwnd = cwnd;
        Self { w }
    }
}

impl Controller for Fixed {
    fn state(&self) -> &Window {
        &self.w
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, _ctx: &Ctx<'_>, _bytes_acked: usize, _flight_before: usize) {}

    fn on_loss(&mut self, _ctx: &Ctx<'_>) {}

    fn on_timeout(&mut self, _ctx: &Ctx<'_>) {}

    fn on_idle(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::AnyController;

    /// Through the enum every hook reaches the variant, overrides included: the default
    /// idle decay would halve the window, `Fixed`'s does not.
    #[test]
    fn a_fixed_window_stays_put_through_the_enum() {
        let mut c = AnyController::Fixed(Fixed::new(1000, 50_000));
        let ctx = Ctx { paths: &[], me: 0 };
        c.on_ack(&ctx, 10_000, 50_000);
        c.on_loss(&ctx);
        c.on_timeout(&ctx);
        c.on_idle();
        assert_eq!(c.window(), 50_000);
        c.undo(20_000, 10_000);
        assert_eq!((c.window(), c.ssthresh()), (20_000, 10_000));
    }
}

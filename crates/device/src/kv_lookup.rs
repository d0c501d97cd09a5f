pub fn run(_ctx: &mut crate::PeCtx<'_>) -> Result<(), crate::DeviceError> {
    Ok(())
}
